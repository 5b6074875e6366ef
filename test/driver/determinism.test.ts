import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { fakeModel } from '../../testkit/fakeModel.js';
import { decisionTopology, type Ev, type Out } from './helpers.js';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'orderly-determinism-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/**
 * One run of a busy topology: three partitions, a rate-limited model with drawn latencies, poison
 * events retried with jitter (drawn from the engine's Random), a crash and a restart, a resolve.
 */
async function runOnce(seed: number, stateDir?: string) {
  const model = fakeModel<Ev, unknown>({
    latencyMs: (_e, random) => random.int(100, 3_000),
    limit: { calls: 5, windowMs: 2_000 },
    poison: (e) => e.bad === true,
    decide: (e) => ({ action: Number(e.id.slice(1)) % 2 ? 'refund' : 'reject' }),
    seed,
  });
  const topology = decisionTopology(model.decide, { maxInFlight: 3, attempts: 2, retryDelayMs: 1_000, retryJitter: 0.5 });
  const driver = new TopologyTestDriver(topology, { partitions: 3, seed, ...(stateDir ? { stateDir } : {}) });
  try {
    const input = driver.createInputTopic<Ev>('events');
    for (let i = 0; i < 30; i++) input.pipeInput(`acct-${i % 7}`, { id: `e${i}`, bad: i === 4 || i === 17 });
    input.pipeRaw('acct-1', 'not json{');
    driver.crash({ at: 4_000 });
    driver.restart({ after: 4_500 });
    await driver.runUntilIdle();
    for (const parked of driver.parked()) await driver.resolve(parked.partition, parked.key!, { decision: { action: 'reject' } });
    await driver.runUntilIdle();
    return {
      history: driver.history(),
      effects: driver.effects(),
      committed: driver.committed(),
      metrics: driver.metrics(),
      out: driver.createOutputTopic<Out>('out').readRecordsToList(),
      now: driver.now(),
    };
  } finally {
    await driver.close();
  }
}

describe('determinism', () => {
  it('gives an identical history for the same seed and inputs, in memory and in LevelDB', async () => {
    const memory1 = await runOnce(7);
    const memory2 = await runOnce(7);
    const level1 = await runOnce(7, join(root, 'a'));
    const level2 = await runOnce(7, join(root, 'b'));

    // The run is busy enough to mean something.
    expect(memory1.metrics.crashes).toBe(1);
    expect(memory1.metrics.rateLimited).toBeGreaterThan(0);
    expect(memory1.metrics.outcomes.RETRY).toBeGreaterThan(0);
    expect(memory1.metrics.outcomes.PARKED).toBeGreaterThanOrEqual(2);
    expect(memory1.metrics.outcomes.DEAD_LETTERED).toBeGreaterThanOrEqual(1);
    expect(memory1.metrics.redeliveries).toBeGreaterThan(0);
    expect(memory1.history.length).toBeGreaterThan(40);
    expect(memory1.metrics.doubleEffects).toBe(0);
    expect(memory1.metrics.orderViolations).toBe(0);

    expect(memory2).toEqual(memory1);
    expect(level1).toEqual(memory1);
    expect(level2).toEqual(memory1);
  }, 60_000);

  it('gives another history for another seed (the seed drives the retry jitter)', async () => {
    const a = await runOnce(7);
    const b = await runOnce(8);
    expect(b.history.map((h) => h.atMs)).not.toEqual(a.history.map((h) => h.atMs));
  });
});
