import { afterEach, describe, expect, it } from 'vitest';
import { RateLimited } from '../../src/dsl/rateLimited.js';
import type { DecideFn } from '../../src/graph/nodes.js';
import { sleep } from '../../src/ports/clock.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { decisionTopology, outcomesAt, type Ev } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

interface Call {
  readonly id: string;
  readonly atMs: number;
  readonly attempt: number;
}

/** A model that takes `ms` of the event (default 100), waiting on the signal too, and records its calls and aborts. */
function signalAwareModel(calls: Call[], aborted: string[]): DecideFn<Ev, unknown> {
  return async (event, ctx) => {
    calls.push({ id: event.id, atMs: ctx.clock.now(), attempt: ctx.attempt });
    try {
      await sleep(ctx.clock, event.ms ?? 100, ctx.signal);
    } catch (error) {
      aborted.push(event.id);
      throw error;
    }
    return { action: 'refund' };
  };
}

function appliedIds(d: TopologyTestDriver): string[] {
  return d.effects().map((e) => e.effectId);
}

describe('a revoked or lost partition gives up its work in flight', () => {
  it('revoke: aborts the model call at once, commits the finished prefix, and the next owner runs the event once', async () => {
    const calls: Call[] = [];
    const aborted: string[] = [];
    driver = new TopologyTestDriver(decisionTopology(signalAwareModel(calls, aborted), { maxInFlight: 2 }), { partitions: 2, commit: 'each' });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1', ms: 100 }, { partition: 0 });
    input.pipeInput('c', { id: 'c1', ms: 60_000 }, { partition: 0 });
    input.pipeInput('b', { id: 'b1', ms: 30_000 }, { partition: 1 });
    await driver.advanceWallClockTime(1_000);

    await driver.revoke([0]);
    // The revocation did not wait for c1's 60 s call; partition 1's call goes on.
    expect(driver.now()).toBe(1_000);
    expect(aborted).toEqual(['c1']);
    expect(driver.committed().map((c) => c.offset)).toEqual([1, 0]);
    expect(outcomesAt(driver, 0, 1)).toEqual([]);

    await driver.assign([0]);
    await driver.runUntilIdle();
    expect(calls.map((c) => [c.id, c.atMs])).toEqual([
      ['a1', 0],
      ['c1', 0],
      ['b1', 0],
      ['c1', 1_000],
    ]);
    expect(outcomesAt(driver, 0, 1)).toEqual(['APPLIED']);
    expect(outcomesAt(driver, 1, 0)).toEqual(['APPLIED']);
    expect(appliedIds(driver).sort()).toEqual(['events/0/0', 'events/0/1', 'events/1/0']);
    expect(driver.committed().map((c) => c.offset)).toEqual([2, 1]);
  });

  it('revoke: drops the late answer of a model that ignores the signal', async () => {
    const calls: Call[] = [];
    const decide: DecideFn<Ev, unknown> = async (event, ctx) => {
      calls.push({ id: event.id, atMs: ctx.clock.now(), attempt: ctx.attempt });
      await sleep(ctx.clock, event.ms ?? 100);
      return { action: 'refund' };
    };
    driver = new TopologyTestDriver(decisionTopology(decide), { commit: 'each' });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1', ms: 5_000 });
    await driver.advanceWallClockTime(1_000);
    await driver.revoke([0]);
    expect(driver.now()).toBe(1_000);

    // Its answer comes at 5 s, after the revocation: nothing is applied, nothing committed.
    await driver.advanceWallClockTime(10_000);
    expect(driver.effects()).toEqual([]);
    expect(driver.history()).toEqual([]);
    expect(driver.committed()[0]!.offset).toBe(0);

    await driver.assign([0]);
    await driver.runUntilIdle();
    expect(calls.map((c) => [c.id, c.atMs])).toEqual([
      ['a1', 0],
      ['a1', 11_000],
    ]);
    expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED']);
    expect(appliedIds(driver)).toEqual(['events/0/0']);
  });

  it('revoke: ends Retry-After waits at once, without counting an attempt; the next owner waits out the 429 anew', async () => {
    const calls: Call[] = [];
    let refusals = 1;
    const decide: DecideFn<Ev, unknown> = async (event, ctx) => {
      calls.push({ id: event.id, atMs: ctx.clock.now(), attempt: ctx.attempt });
      await sleep(ctx.clock, 100, ctx.signal);
      if (refusals-- > 0) throw new RateLimited(60_000);
      return { action: 'refund' };
    };
    // attempts: 1, so a wait given up and counted as an attempt would park the event.
    driver = new TopologyTestDriver(decisionTopology(decide, { maxInFlight: 2, attempts: 1 }), { commit: 'each' });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('x', { id: 'x1' });
    await driver.advanceWallClockTime(500);
    // y1 comes while the gate is shut by x1's 429 (until 60.1 s).
    input.pipeInput('y', { id: 'y1' });
    await driver.advanceWallClockTime(500);
    expect(calls.map((c) => c.id)).toEqual(['x1']);

    await driver.revoke([0]);
    expect(driver.now()).toBe(1_000);
    expect(driver.history().map((h) => h.outcome)).toEqual(['RATE_LIMITED']);

    await driver.assign([0]);
    await driver.runUntilIdle();
    // The gate is the engine's, shared by every partition: it stays shut until the Retry-After ends.
    expect(calls.map((c) => [c.id, c.atMs, c.attempt])).toEqual([
      ['x1', 0, 1],
      ['x1', 60_100, 1],
      ['y1', 60_100, 1],
    ]);
    expect(outcomesAt(driver, 0, 0)).toEqual(['RATE_LIMITED', 'APPLIED']);
    expect(outcomesAt(driver, 0, 1)).toEqual(['APPLIED']);
  });

  it('revoke: ends a retry delay at once; the attempts made so far stay counted, and so does the delay: assigned back, the event retries when it was due', async () => {
    const calls: Call[] = [];
    const decide: DecideFn<Ev, unknown> = async (event, ctx) => {
      calls.push({ id: event.id, atMs: ctx.clock.now(), attempt: ctx.attempt });
      await sleep(ctx.clock, 100, ctx.signal);
      return ctx.attempt === 1 ? { action: 'maybe' } : { action: 'refund' };
    };
    driver = new TopologyTestDriver(decisionTopology(decide, { attempts: 3, retryDelayMs: 30_000, retryJitter: 0 }), { commit: 'each' });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('z', { id: 'z1' });
    await driver.advanceWallClockTime(1_000);
    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY']);

    await driver.revoke([0]);
    expect(driver.now()).toBe(1_000);
    await driver.assign([0]);
    await driver.runUntilIdle();
    expect(calls.map((c) => [c.id, c.atMs, c.attempt])).toEqual([
      ['z1', 0, 1],
      ['z1', 30_100, 2], // its first call failed at 100, 30,000 ms of retry delay before it
    ]);
    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'APPLIED']);
  });

  it('lost: drops the partition without committing; the redelivered finished event is a DUPLICATE, the aborted one runs once', async () => {
    const calls: Call[] = [];
    const aborted: string[] = [];
    // Commits every 5 s: at 1 s, e1's effect is recorded but its offset not committed.
    driver = new TopologyTestDriver(decisionTopology(signalAwareModel(calls, aborted), { maxInFlight: 2 }), { commit: { everyMs: 5_000 } });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('e', { id: 'e1', ms: 100 });
    input.pipeInput('f', { id: 'f1', ms: 60_000 });
    await driver.advanceWallClockTime(1_000);
    expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED']);

    await driver.revoke([0], { lost: true });
    expect(driver.now()).toBe(1_000);
    expect(aborted).toEqual(['f1']);
    // Nothing committed, not even at the commit interval: the partition is no longer this engine's.
    await driver.advanceWallClockTime(10_000);
    expect(driver.committed()[0]!.offset).toBe(0);

    await driver.assign([0]);
    await driver.runUntilIdle();
    expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED', 'DUPLICATE']);
    expect(outcomesAt(driver, 0, 1)).toEqual(['APPLIED']);
    expect(calls.map((c) => c.id)).toEqual(['e1', 'f1', 'f1']);
    expect(appliedIds(driver)).toEqual(['events/0/0', 'events/0/1']);
    expect(driver.committed()[0]!.offset).toBe(2);
  });
});

describe('a commit refused by a rebalance', () => {
  it('does not stop the engine: the offsets are committed by a later commit', async () => {
    const calls: Call[] = [];
    driver = new TopologyTestDriver(decisionTopology(signalAwareModel(calls, [])), { commit: 'each', faults: { refuseCommits: 2 } });
    const input = driver.createInputTopic<Ev>('events');
    for (const id of ['k1', 'k2', 'k3']) input.pipeInput('k', { id });
    await driver.runUntilIdle();
    expect(driver.history().map((h) => h.outcome)).toEqual(['APPLIED', 'APPLIED', 'APPLIED']);
    expect(driver.committed()[0]!.offset).toBe(3);
  });

  it('after the last event, is tried again on a timer', async () => {
    driver = new TopologyTestDriver(decisionTopology(signalAwareModel([], [])), { commit: 'each', faults: { refuseCommits: 1 } });
    driver.createInputTopic<Ev>('events').pipeInput('k', { id: 'k1' });
    await driver.advanceWallClockTime(500);
    expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED']);
    expect(driver.committed()[0]!.offset).toBe(0);
    await driver.runUntilIdle();
    expect(driver.committed()[0]!.offset).toBe(1);
  });
});

describe('stop()', () => {
  it('gives up the work in flight at once by default: nothing waits on the model, the aborted event runs once after the restart', async () => {
    const calls: Call[] = [];
    const aborted: string[] = [];
    driver = new TopologyTestDriver(decisionTopology(signalAwareModel(calls, aborted), { maxInFlight: 2 }), { commit: 'each' });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1', ms: 100 });
    input.pipeInput('b', { id: 'b1', ms: 60_000 });
    await driver.advanceWallClockTime(1_000);
    await driver.stop();
    expect(driver.now()).toBe(1_000);
    expect(aborted).toEqual(['b1']);
    expect(driver.committed()[0]!.offset).toBe(1);

    driver.restart();
    await driver.runUntilIdle();
    expect(outcomesAt(driver, 0, 1)).toEqual(['APPLIED']);
    expect(appliedIds(driver)).toEqual(['events/0/0', 'events/0/1']);
  });

  it('with graceMs, lets the work in flight finish within it and gives up the rest when it ends', async () => {
    const calls: Call[] = [];
    const aborted: string[] = [];
    driver = new TopologyTestDriver(decisionTopology(signalAwareModel(calls, aborted), { maxInFlight: 2 }), { commit: 'each' });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1', ms: 3_000 });
    input.pipeInput('b', { id: 'b1', ms: 60_000 });
    await driver.advanceWallClockTime(1_000);
    await driver.stop({ graceMs: 5_000 });
    // a1 finished at 3 s, inside the grace; b1 was given up when it ended, at 6 s.
    expect(driver.now()).toBe(6_000);
    expect(aborted).toEqual(['b1']);
    expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED']);
    expect(driver.committed()[0]!.offset).toBe(1);
  });
});

describe('stop() while a partition is paused', () => {
  it('a partition paused before a graceful stop stays paused when a unit ends inside the grace: no record reaches a closing partition', async () => {
    const calls: Call[] = [];
    const aborted: string[] = [];
    driver = new TopologyTestDriver(decisionTopology(signalAwareModel(calls, aborted), { maxInFlight: 2 }), {
      commit: 'each',
      maxBufferedPerPartition: 2,
      maxPollRecords: 1,
    });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1', ms: 1_000 });
    input.pipeInput('b', { id: 'b1', ms: 3_000 });
    input.pipeInput('a', { id: 'a2', ms: 100 });
    await driver.advanceWallClockTime(500);
    // a1 and b1 are in flight; two unfinished events paused the partition before a2.
    expect(calls.map((c) => c.id)).toEqual(['a1', 'b1']);
    await driver.stop({ graceMs: 5_000 });
    // Both finished inside the grace (at 1 s and 3 s); a2 was never taken.
    expect(driver.now()).toBe(3_000);
    expect(aborted).toEqual([]);
    expect(calls.map((c) => c.id)).toEqual(['a1', 'b1']);
    expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED']);
    expect(outcomesAt(driver, 0, 1)).toEqual(['APPLIED']);
    expect(outcomesAt(driver, 0, 2)).toEqual([]);
    expect(driver.committed()[0]!.offset).toBe(2);

    driver.restart();
    await driver.runUntilIdle();
    expect(outcomesAt(driver, 0, 2)).toEqual(['APPLIED']);
    expect(appliedIds(driver)).toEqual(['events/0/0', 'events/0/1', 'events/0/2']);
  });
});
