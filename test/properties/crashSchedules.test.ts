import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fc, test } from '@fast-check/vitest';
import { expect } from 'vitest';
import { crashScenarioArbitrary } from '../../testkit/arbitraries.js';
import { runCrashScenario, type CrashScenario } from '../../testkit/crashScenario.js';
import { assertCrashScenario, checkCrashScenario } from '../../testkit/invariants.js';
import { driverModes, type DriverMode } from '../../testkit/driver.js';

// Every run checks 10,000 random crash schedules; ORDERLY_CRASH_SCHEDULES asks for more (or, while
// developing, fewer).
const schedules = Number(process.env.ORDERLY_CRASH_SCHEDULES ?? 10_000);
// A tenth of them run on real LevelDB (reopened at every restart), the rest on memory-level.
const levelRuns = Math.ceil(schedules / 10);
const memoryRuns = schedules - levelRuns;
const timeout = 20 * 60_000;
// A failure shrinks to a small counterexample; past this budget fast-check reports what it has, as a failure.
const budget = { interruptAfterTimeLimit: 10 * 60_000, markInterruptAsFailure: true };

// Schedules checked per production path (each draws its own), reported at the end.
const byMode: Record<DriverMode, number> = { plain: 0, staged: 0, exactlyOnce: 0 };
// Exactly-once schedules whose partitions were reset after an aborted transaction (lost partitions, a refused write).
let withResets = 0;
// At those resets: partitions reset (those whose work the aborted transaction held) and partitions owned, summed.
let partitionsReset = 0;
let partitionsOwnedAtResets = 0;
// Schedules in which a restart or a new assignment skipped finished offsets its commit's metadata listed, per mode.
const withSkipsByMode: Record<DriverMode, number> = { plain: 0, staged: 0, exactlyOnce: 0 };
// Schedules of a two-step topology (classify, then decide) per production path.
const twoStepsByMode: Record<DriverMode, number> = { plain: 0, staged: 0, exactlyOnce: 0 };
// Schedules whose 'decide' ran durable steps (ctx.step) per production path, and of those with 2 or 3 steps.
const runsByMode: Record<DriverMode, number> = { plain: 0, staged: 0, exactlyOnce: 0 };
let multiStepRuns = 0;
// Schedules that stopped the engine as SIGTERM does; that restored partitions over virtual time; and
// in which a stop (or a failure) came while a partition restored, abandoning its restore.
let withStops = 0;
let withRestores = 0;
let withAbandonedRestores = 0;

async function runAndCheck(scenario: CrashScenario, stateDir?: string): Promise<void> {
  const run = await runCrashScenario(scenario, stateDir ? { stateDir } : {});
  try {
    assertCrashScenario(run);
    byMode[scenario.mode ?? 'plain'] += 1;
    const metrics = run.driver.metrics();
    if (metrics.partitionResets > 0) withResets += 1;
    partitionsReset += metrics.partitionsReset;
    partitionsOwnedAtResets += metrics.partitionsOwnedAtResets;
    if (run.driver.metrics().finishedOffsetsResumed > 0) withSkipsByMode[scenario.mode ?? 'plain'] += 1;
    if (scenario.steps === 2) twoStepsByMode[scenario.mode ?? 'plain'] += 1;
    if ((scenario.runSteps ?? 0) > 0) runsByMode[scenario.mode ?? 'plain'] += 1;
    if ((scenario.runSteps ?? 0) > 1) multiStepRuns += 1;
    if (metrics.stops > 0) withStops += 1;
    if (metrics.restores > 0) withRestores += 1;
    if (metrics.restoresAbandoned > 0) withAbandonedRestores += 1;
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

test('every production path ran: schedules checked per mode', () => {
  console.log(
    `crash schedules checked per mode: plain ${byMode.plain}, staged ${byMode.staged}, exactly-once ${byMode.exactlyOnce} (${withResets} with a reset after an aborted transaction; ${partitionsReset} partitions reset of ${partitionsOwnedAtResets} owned at the resets)`,
  );
  expect(withResets, 'exactly-once schedules that lost partitions ran the reset').toBeGreaterThan(0);
  expect(byMode.plain + byMode.staged + byMode.exactlyOnce).toBe(schedules);
  for (const mode of driverModes) expect(byMode[mode], mode).toBeGreaterThan(0);
  console.log(`of which a two-step topology: plain ${twoStepsByMode.plain}, staged ${twoStepsByMode.staged}, exactly-once ${twoStepsByMode.exactlyOnce}`);
  for (const mode of driverModes) expect(twoStepsByMode[mode], `two steps, ${mode}`).toBeGreaterThan(0);
  console.log(
    `of which durable runs (ctx.step 1 to 3 times): plain ${runsByMode.plain}, staged ${runsByMode.staged}, exactly-once ${runsByMode.exactlyOnce}; with 2 or 3 steps: ${multiStepRuns}`,
  );
  for (const mode of driverModes) expect(runsByMode[mode], `durable runs, ${mode}`).toBeGreaterThan(0);
  // A fifth of the schedules at least (2,000 of the default 10,000) run several durable steps.
  expect(multiStepRuns, 'schedules with 2 or 3 durable steps').toBeGreaterThanOrEqual(schedules / 5);
  console.log(
    `of which a restart or an assignment skipped finished offsets listed in the commit metadata: plain ${withSkipsByMode.plain}, staged ${withSkipsByMode.staged}, exactly-once ${withSkipsByMode.exactlyOnce}`,
  );
  for (const mode of driverModes) expect(withSkipsByMode[mode], `skipped finished offsets, ${mode}`).toBeGreaterThan(0);
  console.log(
    `of which stopped as on SIGTERM: ${withStops}; restored partitions over virtual time: ${withRestores}; abandoned a restore at a stop: ${withAbandonedRestores}`,
  );
  expect(withStops, 'schedules with a stop').toBeGreaterThan(0);
  expect(withRestores, 'schedules with restores').toBeGreaterThan(0);
  expect(withAbandonedRestores, 'schedules whose stop came while a partition restored').toBeGreaterThan(0);
});

test('the same seed replays the same history', async () => {
  const [scenario] = fc.sample(
    crashScenarioArbitrary({ maxEvents: 24 }).filter((s) => s.events.length > 10 && s.crashes.length > 0),
    { seed: 7, numRuns: 1 },
  );
  const histories = [];
  for (let i = 0; i < 2; i++) {
    const run = await runCrashScenario(scenario!);
    expect(checkCrashScenario(run)).toEqual([]);
    histories.push(JSON.stringify(run.driver.history()));
    await run.driver.close();
  }
  expect(histories[0]).toBe(histories[1]);
});
