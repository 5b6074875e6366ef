import { afterEach, describe, expect, it } from 'vitest';
import type { DecideFn } from '../../src/graph/nodes.js';
import { TopologyTestDriver, type DriverOptions } from '../../testkit/driver.js';
import { decisionTopology, maxListenersWarnings, outcomesAt, type Ev } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

/** A model that answers at once, recording which event it was called for and when. */
function recordingModel(calls: Array<[string, number]>): DecideFn<Ev, unknown> {
  return (event, ctx) => {
    calls.push([event.id, ctx.clock.now()]);
    return { action: 'refund' };
  };
}

/** Partition 0 restores for 5 s, partition 1 for 1 s; one event on each. */
function twoPartitions(calls: Array<[string, number]>, options: DriverOptions = {}): TopologyTestDriver {
  const d = new TopologyTestDriver(decisionTopology(recordingModel(calls)), {
    partitions: 2,
    commit: 'each',
    restoreMs: (partition) => (partition === 0 ? 5_000 : 1_000),
    ...options,
  });
  const input = d.createInputTopic<Ev>('events');
  input.pipeInput('a', { id: 'a1' }, { partition: 0 });
  input.pipeInput('b', { id: 'b1' }, { partition: 1 });
  return d;
}

describe('restores (DriverOptions.restoreMs)', () => {
  it('runs each partition as soon as its own restore has ended, the others meanwhile', async () => {
    const calls: Array<[string, number]> = [];
    driver = twoPartitions(calls);
    await driver.advanceWallClockTime(3_000);
    expect(calls).toEqual([['b1', 1_000]]);
    await driver.runUntilIdle();
    expect(calls).toEqual([
      ['b1', 1_000],
      ['a1', 5_000],
    ]);
    expect(driver.metrics()).toMatchObject({ restores: 2, restoresAbandoned: 0 });
  });

  it('a stop during a restore abandons it at once: that partition never ran, and the restart restores it again and runs it', async () => {
    const calls: Array<[string, number]> = [];
    driver = twoPartitions(calls);
    await driver.advanceWallClockTime(2_000);
    await driver.stop();
    // The stop did not wait for partition 0's restore (due at 5 s).
    expect(driver.now()).toBe(2_000);
    expect(calls).toEqual([['b1', 1_000]]);
    expect(driver.committed().map((c) => c.offset)).toEqual([0, 1]);
    expect(driver.metrics()).toMatchObject({ stops: 1, restores: 2, restoresAbandoned: 1 });

    driver.restart();
    await driver.runUntilIdle();
    expect(calls).toEqual([
      ['b1', 1_000],
      ['a1', 7_000],
    ]);
    expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED']);
    expect(driver.metrics()).toMatchObject({ restores: 4, restoresAbandoned: 1 });
  });

  it('a revocation waits for the restore under way, as Kafka rebalance steps run in turn, and the partition never runs meanwhile', async () => {
    const calls: Array<[string, number]> = [];
    driver = twoPartitions(calls);
    await driver.advanceWallClockTime(2_000);
    await driver.revoke([0]);
    // Told once its assignment (the restore) ended; its records were not delivered in between.
    expect(driver.now()).toBe(5_000);
    expect(calls).toEqual([['b1', 1_000]]);
    expect(driver.assigned()).toEqual([1]);

    await driver.assign([0]);
    await driver.runUntilIdle();
    expect(calls).toEqual([
      ['b1', 1_000],
      ['a1', 10_000],
    ]);
  });

  it('a partition lost while another restores refuses its commits at once, though the engine hears of the loss only after the restore', async () => {
    const calls: Array<[string, number]> = [];
    driver = new TopologyTestDriver(decisionTopology(recordingModel(calls)), {
      partitions: 2,
      commit: { everyMs: 1_000 },
      restoreMs: (partition) => (partition === 0 ? 10_000 : 0),
    });
    const input = driver.createInputTopic<Ev>('events');
    for (const id of ['b1', 'b2', 'b3']) input.pipeInput('b', { id }, { partition: 1 });
    await driver.advanceWallClockTime(500);
    expect(calls.map(([id]) => id)).toEqual(['b1', 'b2', 'b3']);
    await driver.revoke([1], { lost: true });
    expect(driver.now()).toBe(10_000);
    // Lost at 500 ms: none of the commits due at 1 s and after took partition 1.
    expect(driver.committed().find((c) => c.partition === 1)?.offset ?? 0).toBe(0);
  });

  it('exactly-once: a partition revoked while a reset waits behind a restore is dropped as lost by the reset, not restored again', async () => {
    const calls: Array<[string, number]> = [];
    driver = new TopologyTestDriver(decisionTopology(recordingModel(calls)), {
      partitions: 2,
      mode: 'exactlyOnce',
      commit: 'each',
      restoreMs: (partition) => (partition === 0 ? 10_000 : 0),
    });
    const input = driver.createInputTopic<Ev>('events');
    for (const id of ['b1', 'b2']) input.pipeInput('b', { id }, { partition: 1 });
    // Partition 1's first write is refused: the transaction fails, and its reset waits behind partition 0's restore.
    driver.refuseWrite({ nth: 1 });
    await driver.advanceWallClockTime(1_000);
    await driver.revoke([1]);
    expect(driver.now()).toBe(10_000);
    expect(driver.metrics()).toMatchObject({ partitionResets: 1, restores: 2 });
    expect(driver.assigned()).toEqual([0]);
    expect(driver.committed().find((c) => c.partition === 1)?.offset ?? 0).toBe(0);
  });

  it("a crash at 'restoring' ends the instance before the partition runs; the next one restores it and runs each event once", async () => {
    const calls: Array<[string, number]> = [];
    driver = twoPartitions(calls);
    driver.crash({ point: 'restoring' });
    await driver.runUntilIdle();
    // The first restore to end is partition 1's, at 1 s: the crash comes instead.
    expect(driver.running).toBe(false);
    expect(driver.now()).toBe(1_000);
    expect(calls).toEqual([]);

    driver.restart();
    await driver.runUntilIdle();
    expect(calls).toEqual([
      ['b1', 2_000],
      ['a1', 6_000],
    ]);
    expect(driver.effects().map((e) => e.effectId)).toEqual(['events/1/0', 'events/0/0']);
  });

  it('refuses a restore length that is not 0 or more ms, naming the option (and the partition, from a function)', async () => {
    const topology = decisionTopology(recordingModel([]));
    expect(() => new TopologyTestDriver(topology, { restoreMs: -1 })).toThrow('TopologyTestDriver: restoreMs must be 0 or more ms, got -1');
    expect(() => new TopologyTestDriver(topology, { restoreMs: Number.NaN })).toThrow('TopologyTestDriver: restoreMs must be 0 or more ms, got NaN');

    driver = new TopologyTestDriver(topology, { partitions: 2, restoreMs: (p) => (p === 1 ? -5 : 0) });
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' }, { partition: 0 });
    await expect(driver.runUntilIdle()).rejects.toThrow('restoreMs must be 0 or more ms for partition 1, got -5');
  });

  it('restores more than 10 partitions at once without a MaxListenersExceededWarning: each listens to the engine stop', async () => {
    const calls: Array<[string, number]> = [];
    const warnings = await maxListenersWarnings(async () => {
      driver = new TopologyTestDriver(decisionTopology(recordingModel(calls)), { partitions: 16, restoreMs: 1_000 });
      const input = driver.createInputTopic<Ev>('events');
      for (let p = 0; p < 16; p++) input.pipeInput(`k${p}`, { id: `e${p}` }, { partition: p });
      await driver.runUntilIdle();
    });
    expect(warnings).toEqual([]);
    expect(calls).toHaveLength(16);
    expect(driver!.metrics()).toMatchObject({ restores: 16 });
  });
});
