import { afterEach, describe, expect, it } from 'vitest';
import { runCrashScenario, type CrashScenario, type ScenarioRun } from '../../testkit/crashScenario.js';
import { checkCrashScenario } from '../../testkit/invariants.js';

// A changelog write Kafka refuses for good (a record above the topic's max.message.bytes), on the
// driver's staged path. As orderly's producer does without transactions (gap-less), nothing of the
// instance is written after it; the engine stops as its worker does, and the restarted one (the
// topic fixed) applies every event once, in order. With the fault `changelogGaps` the later writes
// are acknowledged after the refused one, and the properties see the gap.

const runs: ScenarioRun[] = [];
afterEach(async () => {
  for (const run of runs.splice(0)) await run.driver.close();
});

async function run(scenario: CrashScenario, faults: { changelogGaps?: boolean } = {}): Promise<ScenarioRun> {
  const result = await runCrashScenario(scenario, faults);
  runs.push(result);
  return result;
}

/** Poison events retried while the refused write comes: a unit is running when the engine fails on it. */
const retrying: CrashScenario = {
  partitions: 1,
  events: [
    { key: 'k0', partition: 0, poison: false },
    { key: 'k4', partition: 0, poison: true },
    { key: 'k4', partition: 0, poison: false },
    { key: 'k0', partition: 0, poison: true },
    { key: 'k2', partition: 0, poison: true },
    { key: 'k2', partition: 0, poison: true },
  ],
  maxInFlight: 2,
  attempts: 3,
  retryDelayMs: 1000,
  commit: 'each',
  model: { latencyMs: 3448, limit: { calls: 4, windowMs: 1000 }, declareLimit: false },
  crashes: [{ kind: 'refused', nth: 3, restartAfterMs: 8774 }],
  resolutions: ['discard', 'decision', 'discard'],
  replayCrash: { nth: 2, restartAfterMs: 6 },
  mode: 'staged',
  seed: 1326601713,
};

/** Several keys of one partition, their writes pipelined: the refused one has later writes behind it. */
const pipelined: CrashScenario = {
  partitions: 2,
  events: [
    { key: 'k1', partition: 1, poison: false },
    { key: 'k3', partition: 1, poison: false },
    { key: 'k4', partition: 1, poison: false },
    { key: 'k3', partition: 0, poison: true },
    { key: 'k1', partition: 1, poison: false },
    { key: 'k1', partition: 1, poison: true },
    { key: 'k1', partition: 1, poison: true },
    { key: 'k1', partition: 0, poison: false },
    { key: 'k3', partition: 1, poison: false },
    { key: 'k0', partition: 1, poison: false },
    { key: 'k2', partition: 0, poison: false },
    { key: 'k1', partition: 0, poison: false },
    { key: 'k4', partition: 1, poison: false },
    { key: 'k1', partition: 1, poison: false },
    { key: 'k4', partition: 0, poison: false },
    { key: 'k0', partition: 1, poison: false },
    { key: 'k1', partition: 1, poison: false },
  ],
  maxInFlight: 4,
  attempts: 1,
  retryDelayMs: 1000,
  commit: { everyMs: 5000 },
  model: { latencyMs: 2, limit: { calls: 6, windowMs: 10000 }, declareLimit: false },
  // The 6th staged write from the start: an event's end with later writes of its partition behind
  // it (the 5th and the 7th to the 14th have none that a gap would lose).
  crashes: [{ kind: 'refused', nth: 6, restartAfterMs: 1056 }],
  resolutions: ['discard', 'discard'],
  replayCrash: { nth: 2, restartAfterMs: 4991 },
  mode: 'staged',
  seed: -229030484,
};

describe('a changelog write refused for good (staged)', () => {
  it('stops the engine without committing past it, even with a unit running; the restarted engine applies every event once', async () => {
    const result = await run(retrying);
    expect(checkCrashScenario(result)).toEqual([]);
    // The first engine stopped on the refusal and a second one took over.
    expect(new Set(result.driver.history().map((h) => h.instance)).size).toBeGreaterThan(1);
  });

  it('writes nothing of the instance after the refused write, so the restore finds a prefix', async () => {
    expect(checkCrashScenario(await run(pipelined))).toEqual([]);
  });

  it('is caught as a broken guarantee when later writes are acknowledged after the refused one (a gap)', async () => {
    const violations = checkCrashScenario(await run(pipelined, { changelogGaps: true }));
    expect(violations.map((v) => v.invariant)).toContain('lost-event');
  });

  it('is refused on a plain store, which has no changelog', async () => {
    const result = await run({ ...pipelined, mode: 'plain', crashes: [] });
    expect(() => result.driver.refuseWrite()).toThrow(/a plain store has no changelog to refuse a write/);
  });
});

describe('a write refused under exactly-once (the partition is reset)', () => {
  // Found by the crash properties (seed 1716079733): the refused write was an attempts record of
  // in/1/2 (a poison of k0); its lane went on to in/1/3 of the same key, which was decided and
  // APPLIED in the transaction the reset was about to abort, before in/1/2 had run.
  const heldBehindRefused: CrashScenario = {
    partitions: 3,
    events: [
      { key: 'k1', partition: 1, poison: true },
      { key: 'k0', partition: 1, poison: false },
      { key: 'k0', partition: 1, poison: true },
      { key: 'k0', partition: 1, poison: false },
      { key: 'k0', partition: 0, poison: true },
      { key: 'k0', partition: 2, poison: true },
      { key: 'k1', partition: 0, poison: false },
      { key: 'k1', partition: 0, poison: true },
      { key: 'k1', partition: 2, poison: true },
    ],
    maxInFlight: 2,
    attempts: 2,
    retryDelayMs: 0,
    commit: 'each',
    model: { latencyMs: 0, declareLimit: false },
    crashes: [{ kind: 'refused', nth: 3, restartAfterMs: 0 }],
    resolutions: ['decision'],
    mode: 'exactlyOnce',
    steps: 2,
    runSteps: 0,
    seed: 1755276023,
  };

  it("starts nothing more on the partition until it is reset: a key's next event never runs before the one taken back", async () => {
    const result = await run(heldBehindRefused);
    expect(checkCrashScenario(result)).toEqual([]);
    const k0 = result.driver
      .history()
      .filter((h) => !h.replayed && (h.effectId === 'in/1/2' || h.effectId === 'in/1/3'))
      .map((h) => `${h.effectId} ${h.outcome}`);
    // in/1/3 is held behind in/1/2's parking; it is never decided before in/1/2 has run.
    expect(k0[0]).toMatch(/^in\/1\/2 /);
    expect(k0).not.toContain('in/1/3 APPLIED');
  });
});
