// The finished offsets above the committed one travel in the commit's metadata, so that a restart
// (or the partition's next owner) skips them: no DUPLICATE, no output sent again.
import { afterEach, describe, expect, it } from 'vitest';
import type { DecideFn } from '../../src/graph/nodes.js';
import { sleep } from '../../src/ports/clock.js';
import { driverModes, TopologyTestDriver, type DriverOptions } from '../../testkit/driver.js';
import { decisionTopology, type Ev, type Out } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

/** A model that takes `event.ms` of virtual time, and hears an abort. */
const slowModel: DecideFn<Ev, unknown> = async (event, ctx) => {
  await sleep(ctx.clock, event.ms ?? 100, ctx.signal);
  return { action: 'refund' };
};

function setup(options: DriverOptions, maxInFlight: number) {
  const d = new TopologyTestDriver(decisionTopology(slowModel, { maxInFlight }), options);
  driver = d;
  return { d, input: d.createInputTopic<Ev>('events'), output: d.createOutputTopic<Out>('out') };
}

/** The outcomes of one engine instance, as [offset, outcome]. */
const outcomesOf = (d: TopologyTestDriver, instance: number) =>
  d
    .history()
    .filter((h) => h.instance === instance)
    .map((h) => [h.offset, h.outcome]);

describe('finished offsets above the committed one, in the commit metadata', () => {
  for (const mode of driverModes) {
    it(`${mode}: a restart skips the finished events the last commit listed: no DUPLICATE, each output once`, async () => {
      const commits: Array<[number, number]> = [];
      const { d, input, output } = setup({ commit: 'each', mode, observer: { committed: (c) => commits.push([c.offset, c.finishedAbove]) } }, 3);
      input.pipeInput('slow', { id: 'slow', ms: 10_000 }, { partition: 0 });
      input.pipeInput('f', { id: 'f1', ms: 100 }, { partition: 0 });
      input.pipeInput('g', { id: 'g1', ms: 100 }, { partition: 0 });
      await d.advanceWallClockTime(1_000);
      // The commit stays at 0, behind the slow event, and lists 1 and 2 as finished.
      expect(d.committed()[0]!.offset).toBe(0);
      expect(d.committed()[0]!.metadata).toMatch(/^o1:0:/);
      // The observer hears how many each commit listed: the last one both.
      expect(commits.at(-1)).toEqual([0, 2]);
      d.crash();
      d.restart();
      await d.runUntilIdle();
      expect(d.metrics().redeliveries).toBe(3);
      expect(outcomesOf(d, 2)).toEqual([[0, 'APPLIED']]);
      expect(output.readValuesToList().map((v) => v.id)).toEqual(['f1', 'g1', 'slow']);
      expect(d.committed()).toEqual([{ topic: 'events', partition: 0, offset: 3 }]);
    });
  }

  it('a rebalance hands them to the next owner: the revoked partition commits them, the one it is assigned to skips them', async () => {
    const { d, input, output } = setup({ commit: { everyMs: 5_000 } }, 3);
    input.pipeInput('slow', { id: 'slow', ms: 60_000 }, { partition: 0 });
    input.pipeInput('f', { id: 'f1', ms: 100 }, { partition: 0 });
    input.pipeInput('f', { id: 'f2', ms: 100 }, { partition: 0 });
    await d.advanceWallClockTime(1_000);
    // Not committed yet (every 5 s): the revocation commits the prefix (nothing) and the list.
    await d.revoke([0]);
    expect(d.committed()[0]!.offset).toBe(0);
    await d.assign([0]);
    await d.runUntilIdle();
    const again = d.history().filter((h) => h.atMs >= 1_000);
    expect(again.map((h) => [h.offset, h.outcome])).toEqual([[0, 'APPLIED']]);
    expect(output.readValuesToList().map((v) => v.id)).toEqual(['f1', 'f2', 'slow']);
  });

  it('past commitMetadataMaxBytes, the list is cut at the highest offset that fits and the rest come again as DUPLICATE', async () => {
    // 'o1:0:b' and 4 characters of base64: a bitset of 24 offsets, 0 to 23.
    const { d, input } = setup({ commit: 'each', commitMetadataMaxBytes: 12 }, 40);
    for (let i = 0; i < 40; i++) input.pipeInput(`k${i}`, { id: `e${i}`, ms: i % 2 === 0 ? 10_000 : 100 }, { partition: 0 });
    await d.advanceWallClockTime(1_000);
    d.crash();
    d.restart();
    await d.runUntilIdle();
    const duplicates = d
      .history()
      .filter((h) => h.instance === 2 && h.outcome === 'DUPLICATE')
      .map((h) => h.offset);
    expect(duplicates).toEqual([25, 27, 29, 31, 33, 35, 37, 39]);
    expect(d.metrics().doubleEffects).toBe(0);
  });

  it('with commitMetadataMaxBytes 0, commits offsets alone: every finished event above the committed one comes again as DUPLICATE', async () => {
    const { d, input } = setup({ commit: 'each', commitMetadataMaxBytes: 0 }, 3);
    input.pipeInput('slow', { id: 'slow', ms: 10_000 }, { partition: 0 });
    input.pipeInput('f', { id: 'f1', ms: 100 }, { partition: 0 });
    await d.advanceWallClockTime(1_000);
    expect(d.committed()).toEqual([{ topic: 'events', partition: 0, offset: 0 }]);
    d.crash();
    d.restart();
    await d.runUntilIdle();
    expect(outcomesOf(d, 2)).toEqual([
      [1, 'DUPLICATE'],
      [0, 'APPLIED'],
    ]);
  });
});
