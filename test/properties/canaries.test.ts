import { fc } from '@fast-check/vitest';
import { expect, test } from 'vitest';
import { crashScenarioArbitrary, type CrashScenarioBounds } from '../../testkit/arbitraries.js';
import { runCrashScenario, type CrashScenario, type ScenarioFaults } from '../../testkit/crashScenario.js';
import { assertCrashScenario } from '../../testkit/invariants.js';

// Each canary breaks orderly on purpose; the crash properties, run as the default run runs them
// (the same arbitrary, the same invariants), must catch it within a few hundred schedules.
const timeout = 5 * 60_000;

async function caught(faults: ScenarioFaults, bounds: CrashScenarioBounds = {}): Promise<fc.RunDetails<[CrashScenario]>> {
  const property = fc.asyncProperty(crashScenarioArbitrary(bounds), async (scenario) => {
    const run = await runCrashScenario(scenario, faults);
    try {
      assertCrashScenario(run);
    } finally {
      await run.driver.close();
    }
  });
  return fc.check(property, { numRuns: 500, seed: 42, endOnFailure: true });
}

test('canary: a log that commits past unfinished events is caught, with a seed and path to replay it', async () => {
  const result = await caught({ commitAheadBy: 2 }, { maxPartitions: 1 });
  expect(result.failed).toBe(true);
  const report = fc.defaultReportMessage(result) ?? '';
  expect(report).toMatch(/seed: 42, path: "[\d:]+"/);
  expect(String(result.errorInstance)).toMatch(/commit-past-unfinished|lost-event/);
}, timeout);

test('canary: an engine that ignores Retry-After (its gate reopens at once after a 429) is caught', async () => {
  const result = await caught({ ignoreRetryAfter: true });
  expect(result.failed).toBe(true);
  expect(String(result.errorInstance)).toMatch(/^Error: retry-after-ignored: engine \d+ called the step/);
}, timeout);

test.each(['state-first', 'record-first'] as const)('canary: an effect whose state writes and effect record land in two batches (%s) is caught by the state', async (order) => {
  const result = await caught({ splitEffectBatch: order });
  expect(result.failed).toBe(true);
  // The state shows the effect twice or missing; or, when the split falls in a replay, the held
  // list moved on without the effect record, and a later event of the key was applied first.
  expect(String(result.errorInstance)).toMatch(/state-mismatch: key \d+\/k\d+: the state shows events|order-violation/);
}, timeout);

test('canary: a staged store that finishes an event before its write is durable is caught', async () => {
  const result = await caught({ durableAtLanding: true });
  expect(result.failed).toBe(true);
  expect(result.counterexample?.[0].mode).not.toBe('plain');
  expect(String(result.errorInstance)).toMatch(/lost-event|state-mismatch|commit-past-unfinished/);
}, timeout);

test('canary: an exactly-once log that commits offsets outside the transaction is caught', async () => {
  const result = await caught({ offsetsOutsideTransaction: true });
  expect(result.failed).toBe(true);
  expect(result.counterexample?.[0].mode).toBe('exactlyOnce');
  expect(String(result.errorInstance)).toMatch(/lost-event|state-mismatch/);
}, timeout);

test('canary: a step answered synchronously whose attempts record is skipped is caught', async () => {
  const result = await caught({ syncAnswerSkipsAttempts: true });
  expect(result.failed).toBe(true);
  expect(String(result.errorInstance)).toMatch(/^Error: attempt-unrecorded: /);
}, timeout);
