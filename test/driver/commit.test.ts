import { afterEach, describe, expect, it } from 'vitest';
import type { DecideFn } from '../../src/graph/nodes.js';
import { sleep } from '../../src/ports/clock.js';
import { TopologyTestDriver, type DriverOptions } from '../../testkit/driver.js';
import { decisionTopology, type Ev } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

/** A model that takes `event.ms` of virtual time. */
const slowModel: DecideFn<Ev, unknown> = async (event, ctx) => {
  await sleep(ctx.clock, event.ms ?? 0);
  return { action: 'refund' };
};

function setup(options: DriverOptions, maxInFlight = 1) {
  const d = new TopologyTestDriver(decisionTopology(slowModel, { maxInFlight }), options);
  driver = d;
  return { d, input: d.createInputTopic<Ev>('events') };
}

const committed = (d: TopologyTestDriver, partition = 0) => d.committed()[partition]!.offset;

/** Steps virtual time by `stepMs` up to `untilMs`, noting the moments the committed offset moved. */
async function commitTimeline(d: TopologyTestDriver, stepMs: number, untilMs: number): Promise<Array<[number, number]>> {
  const moves: Array<[number, number]> = [];
  let last = committed(d);
  while (d.now() < untilMs) {
    await d.advanceWallClockTime(stepMs);
    const now = committed(d);
    if (now !== last) moves.push([d.now(), now]);
    last = now;
  }
  return moves;
}

describe('commit policy', () => {
  it("'each' commits after each finished event", async () => {
    const { d, input } = setup({ commit: 'each' });
    for (let i = 0; i < 4; i++) input.pipeInput('k', { id: `${i}`, ms: 1_000 }, { partition: 0 });
    expect(await commitTimeline(d, 250, 5_000)).toEqual([
      [1_000, 1],
      [2_000, 2],
      [3_000, 3],
      [4_000, 4],
    ]);
  });

  it('{ everyMs: 5000 } commits the finished prefix at multiples of 5000 virtual ms only', async () => {
    const { d, input } = setup({ commit: { everyMs: 5_000 } });
    // Finishing at 1500, 3000, 4500, 6000, 7500, 9000, 10500, 12000.
    for (let i = 0; i < 8; i++) input.pipeInput('k', { id: `${i}`, ms: 1_500 }, { partition: 0 });
    const moves = await commitTimeline(d, 100, 20_000);
    expect(moves).toEqual([
      [5_000, 3],
      [10_000, 6],
      [15_000, 8],
    ]);
  });

  it('commits on the interval boundaries even when the first event finishes off a boundary', async () => {
    const { d, input } = setup({ commit: { everyMs: 5_000 } });
    await d.advanceWallClockTime(3_200);
    input.pipeInput('k', { id: 'late', ms: 300 }, { partition: 0 }); // finishes at 3500
    expect(await commitTimeline(d, 100, 12_000)).toEqual([[5_000, 1]]);
  });

  it('never commits past an unfinished event: a slow key blocks the commit of later finished events of other keys', async () => {
    const { d, input } = setup({ commit: 'each' }, 3);
    input.pipeInput('slow', { id: 'slow', ms: 20_000 }, { partition: 0 });
    for (let i = 0; i < 5; i++) input.pipeInput(`fast-${i}`, { id: `fast-${i}`, ms: 100 }, { partition: 0 });
    await d.advanceWallClockTime(19_999);
    expect(
      d
        .history()
        .filter((h) => h.outcome === 'APPLIED')
        .map((h) => h.offset),
    ).toEqual([1, 2, 3, 4, 5]);
    expect(committed(d)).toBe(0);
    await d.advanceWallClockTime(1);
    expect(committed(d)).toBe(6);
  });

  it('with { everyMs } too, the prefix stops at the first unfinished event and moves on at the next boundary after it finishes', async () => {
    const { d, input } = setup({ commit: { everyMs: 5_000 } }, 2);
    input.pipeInput('a', { id: 'a', ms: 100 }, { partition: 0 });
    input.pipeInput('slow', { id: 'slow', ms: 7_000 }, { partition: 0 });
    for (let i = 0; i < 4; i++) input.pipeInput('b', { id: `b${i}`, ms: 100 }, { partition: 0 });
    expect(await commitTimeline(d, 100, 16_000)).toEqual([
      [5_000, 1],
      [10_000, 6],
    ]);
  });

  it('commits each partition on its own: one stuck partition does not hold back another', async () => {
    const { d, input } = setup({ commit: 'each', partitions: 2 });
    input.pipeInput('slow', { id: 'slow', ms: 10_000 }, { partition: 0 });
    input.pipeInput('x', { id: 'x', ms: 100 }, { partition: 1 });
    input.pipeInput('y', { id: 'y', ms: 100 }, { partition: 1 });
    await d.advanceWallClockTime(1_000);
    expect(d.committed().map((c) => c.offset)).toEqual([0, 2]);
    await d.advanceWallClockTime(9_000);
    expect(d.committed().map((c) => c.offset)).toEqual([1, 2]);
  });

  it('after a crash, redelivers exactly what was not committed, and skips what its metadata listed as finished', async () => {
    const { d, input } = setup({ commit: 'each' }, 2);
    input.pipeInput('slow', { id: 'slow', ms: 10_000 }, { partition: 0 });
    input.pipeInput('f', { id: 'f1', ms: 100 }, { partition: 0 });
    input.pipeInput('f', { id: 'f2', ms: 100 }, { partition: 0 });
    await d.advanceWallClockTime(1_000);
    d.crash();
    d.restart();
    await d.runUntilIdle();
    expect(d.metrics().redeliveries).toBe(3);
    // The finished events come back, and are skipped: the last commit (at 0) listed them in its
    // metadata (test/driver/offsetMetadata.test.ts). Only the slow one is applied by the new instance.
    const second = d.history().filter((h) => h.instance === 2);
    expect(second.map((h) => [h.offset, h.outcome])).toEqual([[0, 'APPLIED']]);
    expect(committed(d)).toBe(3);
  });

  it('refuses a commit interval that is not a whole number of at least 1', async () => {
    const { d } = setup({ commit: { everyMs: 0 } });
    await expect(d.runUntilIdle()).rejects.toThrow("Engine: commit.everyMs must be a whole number of at least 1, got 0; or commit: 'each'");
    await d.close().catch(() => undefined);
    const { d: infinite } = setup({ commit: { everyMs: Number.POSITIVE_INFINITY } });
    await expect(infinite.runUntilIdle()).rejects.toThrow("Engine: commit.everyMs must be a whole number of at least 1, got Infinity; or commit: 'each'");
  });
});
