import { fc } from '@fast-check/vitest';
import { expect, test } from 'vitest';
import { crashScenarioArbitrary, type CrashScenarioBounds } from '../../testkit/arbitraries.js';
import { runCrashScenario, type CrashScenario, type ScenarioFaults } from '../../testkit/crashScenario.js';
import { assertCrashScenario } from '../../testkit/invariants.js';

// Each canary breaks orderly on purpose; the crash properties, run as the default run runs them
// (the same arbitrary, the same invariants), must catch it within the default run's schedules
// (most are caught within a few hundred; offsets outside the transaction took 811 at seed 42).
const DEFAULT_RUN = 10_000;
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
  // As many schedules as the default run checks; the check ends at the first one that fails.
  return fc.check(property, { numRuns: DEFAULT_RUN, seed: 42, endOnFailure: true });
}

test(
  'canary: a log that commits past unfinished events is caught, with a seed and path to replay it',
  async () => {
    const result = await caught({ commitAheadBy: 2 }, { maxPartitions: 1 });
    expect(result.failed).toBe(true);
    const report = fc.defaultReportMessage(result) ?? '';
    expect(report).toMatch(/seed: 42, path: "[\d:]+"/);
    expect(String(result.errorInstance)).toMatch(/commit-past-unfinished|lost-event/);
  },
  timeout,
);

test(
  'canary: a commit whose metadata lists an unfinished offset as finished (a restart would skip it) is caught',
  async () => {
    const result = await caught({ metadataListsUnfinished: true });
    expect(result.failed).toBe(true);
    expect(String(result.errorInstance)).toMatch(/commit-past-unfinished|lost-event/);
  },
  timeout,
);

test(
  'canary: an engine that ignores Retry-After (its gate reopens at once after a 429) is caught',
  async () => {
    const result = await caught({ ignoreRetryAfter: true });
    expect(result.failed).toBe(true);
    expect(String(result.errorInstance)).toMatch(/^Error: retry-after-ignored: engine \d+ called the step/);
  },
  timeout,
);

test(
  'canary: an effect whose state writes land before its effect record, in another batch, is caught',
  async () => {
    const result = await caught({ splitEffectBatch: 'state-first' });
    expect(result.failed).toBe(true);
    // A crash between the two: the state shows the effect without its record (and twice once it
    // runs again); or, in a replay, the held list moved on without the record, so the event is
    // lost and a later event of its key applied before it.
    expect(String(result.errorInstance)).toMatch(/state-mismatch|order-violation|lost-event/);
  },
  timeout,
);

test(
  'canary: an effect whose record lands before its state writes, in another batch, is caught by the state alone',
  async () => {
    const result = await caught({ splitEffectBatch: 'record-first' });
    expect(result.failed).toBe(true);
    // A crash between the two leaves the effect recorded and its state lost: every other invariant holds.
    expect(String(result.errorInstance)).toMatch(/^Error: state-mismatch: key \d+\/k\d+: the state shows events/);
  },
  timeout,
);

test(
  'canary: a staged store that finishes an event before its write is durable is caught',
  async () => {
    const result = await caught({ durableAtLanding: true });
    expect(result.failed).toBe(true);
    expect(result.counterexample?.[0].mode).not.toBe('plain');
    expect(String(result.errorInstance)).toMatch(/lost-event|state-mismatch|commit-past-unfinished/);
  },
  timeout,
);

test(
  'canary: an exactly-once log that commits offsets outside the transaction is caught',
  async () => {
    const result = await caught({ offsetsOutsideTransaction: true });
    expect(result.failed).toBe(true);
    expect(result.counterexample?.[0].mode).toBe('exactlyOnce');
    expect(String(result.errorInstance)).toMatch(/lost-event|state-mismatch/);
  },
  timeout,
);

test(
  'canary: a step answered synchronously whose attempts record is skipped is caught',
  async () => {
    const result = await caught({ syncAnswerSkipsAttempts: true });
    expect(result.failed).toBe(true);
    expect(String(result.errorInstance)).toMatch(/^Error: attempt-unrecorded: /);
  },
  timeout,
);

test(
  'canary: a worker fenced out of its group whose producer still commits (its late writes race the new owner) is caught',
  async () => {
    const result = await caught({ unfencedProducer: true });
    expect(result.failed).toBe(true);
    const scenario = result.counterexample![0];
    expect(scenario.mode).toBe('exactlyOnce');
    expect(scenario.crashes.some((c) => c.kind === 'fenced')).toBe(true);
    expect(String(result.errorInstance)).toMatch(/double-effect|state-mismatch|order-violation/);
  },
  timeout,
);

test(
  'canary: a producer that goes on after Kafka refused a changelog write (a gap in the changelog) is caught',
  async () => {
    const result = await caught({ changelogGaps: true });
    expect(result.failed).toBe(true);
    const scenario = result.counterexample![0];
    expect(scenario.mode).toBe('staged');
    expect(scenario.crashes.some((c) => c.kind === 'refused')).toBe(true);
    expect(String(result.errorInstance)).toMatch(/state-mismatch|double-effect|order-violation|lost-event/);
  },
  timeout,
);

test(
  'canary: an exactly-once reset (partitions lost, transaction aborted) that keeps the local writes it threw away is caught',
  async () => {
    const result = await caught({ resetKeepsLocalState: true });
    expect(result.failed).toBe(true);
    const scenario = result.counterexample![0];
    expect(scenario.mode).toBe('exactlyOnce');
    expect(scenario.crashes.some((c) => (c.kind === 'revoke' && c.lost) || c.kind === 'fenced' || c.kind === 'refused')).toBe(true);
    // A kept write of the aborted transaction shows as a state that disagrees with the effects, an
    // event that seems done, or an attempts record of the aborted try that outlives its event.
    expect(String(result.errorInstance)).toMatch(/lost-event|state-mismatch|state-left-behind/);
  },
  timeout,
);

test(
  'canary: an engine that skips the run journal (ctx.step runs every step again on every try) is caught',
  async () => {
    const result = await caught({ skipRunJournal: true });
    expect(result.failed).toBe(true);
    expect((result.counterexample?.[0].runSteps ?? 0) > 0).toBe(true);
    expect(String(result.errorInstance)).toMatch(
      /^Error: step-run-again: \d+ runs of a durable step after its journal entry was durable: engine \d+ ran durable step 'tool-\d'/,
    );
    console.log(`canary skipRunJournal caught after ${result.numRuns} schedules`);
  },
  timeout,
);

test(
  'canary: an engine that prunes effect records at or above the committed offset (their events may come again) is caught',
  async () => {
    const result = await caught({ pruneAheadOfCommit: true });
    expect(result.failed).toBe(true);
    // An event finished after the last commit comes again after a crash, its record gone: applied twice.
    expect(String(result.errorInstance)).toMatch(/^Error: double-effect: /);
  },
  timeout,
);
