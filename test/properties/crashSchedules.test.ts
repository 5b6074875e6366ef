import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fc, test } from '@fast-check/vitest';
import { expect } from 'vitest';
import { crashScenarioArbitrary } from '../../testkit/arbitraries.js';
import { runCrashScenario, type CrashScenario } from '../../testkit/crashScenario.js';
import { assertCrashScenario, checkCrashScenario } from '../../testkit/invariants.js';

// Every run checks at least 10,000 random crash schedules; ORDERLY_CRASH_SCHEDULES asks for more.
const schedules = Math.max(10_000, Number(process.env.ORDERLY_CRASH_SCHEDULES ?? 0));
// A tenth of them run on real LevelDB (reopened at every restart), the rest on memory-level.
const levelRuns = Math.ceil(schedules / 10);
const memoryRuns = schedules - levelRuns;
const timeout = 20 * 60_000;
// A failure shrinks to a small counterexample; past this budget fast-check reports what it has, as a failure.
const budget = { interruptAfterTimeLimit: 10 * 60_000, markInterruptAsFailure: true };

async function runAndCheck(scenario: CrashScenario, stateDir?: string): Promise<void> {
  const run = await runCrashScenario(scenario, stateDir ? { stateDir } : {});
  try {
    assertCrashScenario(run);
  } finally {
    await run.driver.close();
  }
}

test.prop([crashScenarioArbitrary()], { numRuns: memoryRuns, ...budget })(
  'per-key order, no double effect, prefix-only commits and convergence under random crashes (memory-level)',
  async (scenario) => runAndCheck(scenario),
  timeout,
);

test.prop([crashScenarioArbitrary({ maxEvents: 16 })], { numRuns: levelRuns, ...budget })(
  'the same invariants with the state in LevelDB',
  async (scenario) => {
    const dir = await mkdtemp(join(tmpdir(), 'orderly-prop-'));
    try {
      await runAndCheck(scenario, dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
  timeout,
);

test('canary: a log that commits past unfinished events is caught, with a seed and path to replay it', async () => {
  const property = fc.asyncProperty(crashScenarioArbitrary({ maxPartitions: 1 }), async (scenario) => {
    const run = await runCrashScenario(scenario, { commitAheadBy: 2 });
    try {
      assertCrashScenario(run);
    } finally {
      await run.driver.close();
    }
  });
  const result = await fc.check(property, { numRuns: 500, seed: 42, endOnFailure: true });
  expect(result.failed).toBe(true);
  const report = fc.defaultReportMessage(result) ?? '';
  expect(report).toMatch(/seed: 42, path: "[\d:]+"/);
  expect(String(result.errorInstance)).toMatch(/commit-past-unfinished|lost-event/);
}, timeout);

test('the same seed replays the same history', async () => {
  const [scenario] = fc.sample(crashScenarioArbitrary({ maxEvents: 24 }).filter((s) => s.events.length > 10 && s.crashes.length > 0), { seed: 7, numRuns: 1 });
  const histories = [];
  for (let i = 0; i < 2; i++) {
    const run = await runCrashScenario(scenario!);
    expect(checkCrashScenario(run)).toEqual([]);
    histories.push(JSON.stringify(run.driver.history()));
    await run.driver.close();
  }
  expect(histories[0]).toBe(histories[1]);
});
