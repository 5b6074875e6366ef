import { afterEach, describe, expect, it } from 'vitest';
import { effect } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import type { DecideContext } from '../../src/index.js';
import type { EffectRecord } from '../../src/engine/outputs.js';
import type { StoreOp } from '../../src/ports/store.js';
import { RING_SIZE } from '../../src/engine/effectRing.js';
import { stateKeys } from '../../src/state/stateKeys.js';
import { driverModes, TopologyTestDriver, type DriverMode } from '../../testkit/driver.js';
import { fakeModel } from '../../testkit/fakeModel.js';
import { Decision, decisionTopology, outcomesAt, type Ev } from './helpers.js';

// Effect records are pruned once no event can need them (docs/guarantees.md, "How long effect
// records are kept"): below the committed offset for ids derived from offsets, past applyOnce's
// idRetentionMs for declared ids; durable deletes, so tombstones on a staged or exactly-once
// changelog. And nothing else an event writes outlives it.

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

const model = () => fakeModel<Ev, unknown>({ latencyMs: (e) => e.ms ?? 10, decide: () => ({ action: 'refund' }) });

/**
 * The offsets of the effect records a restart would find, under their effect ids (`stored`) and in
 * their partitions' rings (`ring`), and of those pruned (deleted once durable, or replaced at their
 * ring position).
 */
async function effectOffsets(d: TopologyTestDriver): Promise<{ stored: number[]; ring: number[]; pruned: number[] }> {
  const offsets = (entries: Array<[string, EffectRecord]>) => entries.map(([, r]) => r.offset).sort((a, b) => a - b);
  const stored = offsets(await d.storedEntries<EffectRecord>(stateKeys.effectPrefix('fx')));
  const ring = offsets(await d.storedEntries<EffectRecord>(stateKeys.ringPrefix('fx')));
  const pruned = [...d.prunedEffectRecords().values()].map((r) => r.offset).sort((a, b) => a - b);
  return { stored, ring, pruned };
}

/** `n` quick events on partition 0, on 64 keys. */
function pipeQuick(d: TopologyTestDriver, from: number, n: number): void {
  const input = d.createInputTopic<Ev>('events');
  for (let i = from; i < from + n; i++) input.pipeInput(`k${i % 64}`, { id: `e${i}` }, { partition: 0 });
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe.each(driverModes)('effect records with ids derived from offsets (%s)', (mode: DriverMode) => {
  it("take the position offset % RING_SIZE of their partition's ring, and a later one takes it only once the committed offset is past them", async () => {
    const d = (driver = new TopologyTestDriver(decisionTopology(model().decide, { maxInFlight: 4 }), { mode, commit: { everyMs: 1_000 } }));
    const input = d.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'e0' }, { partition: 0 });
    input.pipeInput('slow', { id: 'e1', ms: 600_000 }, { partition: 0 });
    pipeQuick(d, 2, RING_SIZE + 1);
    // 10 ms per event, 3 at a time beside e1: all but e1 end within 60 s.
    await d.advanceWallClockTime(120_000);
    // e1 holds the committed offset at 1. Offset RING_SIZE took position 0 (offset 0 was committed:
    // its record counts as pruned) and RING_SIZE + 1 the free position 1; RING_SIZE + 2 found
    // position 2 holding offset 2, not committed, so its record is under its effect id.
    expect(d.committed()).toMatchObject([{ topic: 'events', partition: 0, offset: 1 }]);
    expect(await effectOffsets(d)).toEqual({ stored: [RING_SIZE + 2], ring: range(2, RING_SIZE + 2), pruned: [0] });

    await d.runUntilIdle();
    // e1's position was taken by a later offset: its record went under its effect id too, and
    // both were pruned once the committed offset passed them.
    expect(d.committed()).toMatchObject([{ topic: 'events', partition: 0, offset: RING_SIZE + 3 }]);
    expect(await effectOffsets(d)).toEqual({ stored: [], ring: range(2, RING_SIZE + 2), pruned: [0, 1, RING_SIZE + 2] });
    expect(d.metrics().doubleEffects).toBe(0);
  });

  it('in the ring make a redelivered event a DUPLICATE; a position taken asks for a commit without waiting for the interval', async () => {
    const d = (driver = new TopologyTestDriver(decisionTopology(model().decide, { maxInFlight: 4 }), {
      mode,
      effectRingSize: 64,
      commit: { everyMs: 3_600_000 },
    }));
    pipeQuick(d, 0, 100);
    // 10 ms per event, 4 at a time: all end within 1 s, long before the commit interval.
    await d.advanceWallClockTime(5_000);
    // Offset 64 found position 0 holding offset 0, never committed: a commit came at once, and
    // left the last events uncommitted. The events in flight then recorded under their effect ids.
    const committed = d.committed()[0]!.offset;
    expect(committed).toBeGreaterThanOrEqual(64);
    expect(committed).toBeLessThan(100);
    const { stored, ring } = await effectOffsets(d);
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.length).toBeLessThanOrEqual(4);
    expect(stored.every((o) => o >= 64)).toBe(true);
    // The 64 positions hold the last record written at each: offset 0 where 64 found it taken.
    expect(ring).toHaveLength(64);
    expect(new Set([...stored, ...ring])).toEqual(new Set([0, ...range(36, 100)]));
    d.crash();
    d.restart();
    await d.runUntilIdle();
    expect(outcomesAt(d, 0, 99)).toEqual(['APPLIED', 'DUPLICATE']);
    expect(d.metrics().doubleEffects).toBe(0);
  });

  it('with effectRing false go under their effect ids, as before rings, and are pruned once the committed offset is past them', async () => {
    const d = (driver = new TopologyTestDriver(decisionTopology(model().decide, { maxInFlight: 4 }), { mode, effectRing: false, commit: { everyMs: 1_000 } }));
    pipeQuick(d, 0, 3);
    await d.runUntilIdle();
    // Pruned: they were under their effect ids (a ring record is never deleted).
    expect(await effectOffsets(d)).toEqual({ stored: [], ring: [], pruned: [0, 1, 2] });
  });

  it('under their effect ids (replays) left behind by a worker that stopped before pruning them are pruned when the partition is assigned again', async () => {
    let keepPrunes = true;
    const dropWrite = (op: StoreOp) => keepPrunes && op.type === 'del' && op.key.startsWith('effect/');
    const bad = fakeModel<Ev, unknown>({ latencyMs: 10, decide: (e) => (e.bad ? { action: 'nonsense' } : { action: 'refund' }) });
    const d = (driver = new TopologyTestDriver(decisionTopology(bad.decide, { maxInFlight: 4, attempts: 1 }), {
      mode,
      commit: { everyMs: 1_000 },
      faults: { dropWrite },
    }));
    const input = d.createInputTopic<Ev>('events');
    input.pipeInput('k', { id: 'e0', bad: true }, { partition: 0 });
    input.pipeInput('k', { id: 'e1' }, { partition: 0 });
    input.pipeInput('j', { id: 'e2' }, { partition: 0 });
    await d.runUntilIdle();
    await d.resolve(0, 'k', { decision: { action: 'refund' } });
    await d.runUntilIdle();
    // The replays (e0, e1) recorded their effects under their effect ids; their prunes were dropped.
    expect(await effectOffsets(d)).toEqual({ stored: [0, 1], ring: [2], pruned: [] });

    d.crash();
    keepPrunes = false;
    d.restart();
    await d.runUntilIdle();
    expect(await effectOffsets(d)).toEqual({ stored: [], ring: [2], pruned: [0, 1] });
  });
});

describe('effect records of declared ids', () => {
  it('are kept for idRetentionMs: a duplicate within it is a DUPLICATE, one after it is applied again', async () => {
    const m = model();
    const topology = stream<Ev>('events', { effectId: ({ value }) => value.id.replace(/#.*/, '') })
      .keyedSerial({ maxInFlight: 2 })
      .agentStep('decide', m.decide, { schema: Decision })
      .park({ attempts: 1 })
      .applyOnce(
        effect('fx', (v: { event: Ev; decision: Decision }) => v.event.id),
        { idRetentionMs: 60_000 },
      )
      .to('out')
      .build();
    const d = (driver = new TopologyTestDriver(topology, { commit: { everyMs: 1_000 } }));
    const input = d.createInputTopic<Ev>('events');
    const outcomeOf = (id: string) =>
      d
        .history()
        .filter((h) => h.effectId === id)
        .map((h) => h.outcome);

    input.pipeInput('k', { id: 'order-1#a' }, { partition: 0 });
    await d.advanceWallClockTime(30_000);
    input.pipeInput('k', { id: 'order-1#b' }, { partition: 0 });
    await d.advanceWallClockTime(10_000);
    expect(outcomeOf('order-1')).toEqual(['APPLIED', 'DUPLICATE']);

    // Past the window: the next commit's sweep prunes it (another event's commit here).
    await d.advanceWallClockTime(30_000);
    input.pipeInput('other', { id: 'order-2' }, { partition: 0 });
    await d.advanceWallClockTime(10_000);
    expect([...d.prunedEffectRecords().values()].map((r) => r.effectId)).toEqual(['order-1']);
    expect((await d.storedEntries<EffectRecord>(stateKeys.effectPrefix('fx'))).map(([, r]) => r.effectId)).toEqual(['order-2']);

    input.pipeInput('k', { id: 'order-1#c' }, { partition: 0 });
    await d.runUntilIdle();
    expect(outcomeOf('order-1')).toEqual(['APPLIED', 'DUPLICATE', 'APPLIED']);
  });
});

describe('records that live only as long as their event', () => {
  it("attempts records of a later agent step go when its event parks, and nothing of a parked key's events outlives their replay", async () => {
    const topology = stream<Ev>('events')
      .keyedSerial({ maxInFlight: 2 })
      .agentStep('classify', () => ({ action: 'refund' }), { schema: Decision })
      .park({ attempts: 2, retryDelayMs: 100 })
      .agentStep(
        'decide',
        async ({ event: e }, ctx) => {
          await ctx.step('look-up', () => `looked up ${e.id}`);
          if (e.bad) throw new Error(`cannot decide ${e.id}`);
          return { action: 'reject' as const };
        },
        { schema: Decision },
      )
      .park({ attempts: 2, retryDelayMs: 100 })
      .applyOnce(effect('fx', (v: { event: { event: Ev }; decision: Decision }) => v.event.event.id))
      .to('out')
      .build();
    const d = (driver = new TopologyTestDriver(topology, { commit: { everyMs: 1_000 } }));
    const input = d.createInputTopic<Ev>('events');
    input.pipeInput('k', { id: 'e0', bad: true }, { partition: 0 });
    input.pipeInput('k', { id: 'e1' }, { partition: 0 });
    input.pipeInput('j', { id: 'e2' }, { partition: 0 });
    await d.runUntilIdle();
    expect(d.parked().map((p) => p.lane)).toEqual(['k']);
    // Parked at 'decide' after a failed attempt: its attempts record there went with the park; its run journal stays for the replay.
    expect(await d.storedEntries('attempts/')).toEqual([]);
    expect((await d.storedEntries('run/')).map(([key]) => key)).toEqual([stateKeys.runStep('decide-runs', { topic: 'events', partition: 0 }, 'events/0/0', 0)]);

    await d.resolve(0, 'k', { decision: { action: 'refund' } });
    await d.runUntilIdle();
    for (const prefix of ['attempts/', 'run/', 'parked/', 'held/', 'heldid/']) expect(await d.storedEntries(prefix), prefix).toEqual([]);
    expect(await effectOffsets(d)).toEqual({ stored: [], ring: [2], pruned: [0, 1] });
  });
});

describe('the ring after a restart', () => {
  // Exactly-once has no such record: a crash aborts the transaction that wrote it, uncommitted.
  it.each(['plain', 'staged'] as const)(
    'keeps a record the committed offset has not passed, written by the engine before, from a later event at its position (%s)',
    async (mode: DriverMode) => {
      // Quick events answer at once, so that a later event claims its position while an earlier
      // one of its partition still waits behind its key.
      const decide = (e: Ev, ctx: DecideContext): { action: 'refund' } | Promise<{ action: 'refund' }> =>
        e.ms ? new Promise((resolve) => ctx.clock.setTimer(e.ms!, () => resolve({ action: 'refund' }))) : { action: 'refund' };
      const d = (driver = new TopologyTestDriver(decisionTopology(decide, { maxInFlight: 8 }), { mode, effectRingSize: 4, commit: { everyMs: 3_600_000 } }));
      const input = d.createInputTopic<Ev>('events');
      // Offset 0 holds the committed offset at 0; 1 to 4 (one key) end, their records at positions 1, 2, 3 and 0.
      input.pipeInput('s', { id: 'e0', ms: 600_000 }, { partition: 0 });
      for (const id of ['e1', 'e2', 'e3', 'e4']) input.pipeInput('x', { id }, { partition: 0 });
      await d.advanceWallClockTime(1_000);
      expect(await effectOffsets(d)).toMatchObject({ ring: [1, 2, 3, 4] });
      d.crash();
      // Offset 8 is at position 0: on the restarted engine it ends while offset 4 waits behind 1 to 3
      // (its key's, DUPLICATEs now), and must not take the position of 4's record.
      for (const [key, id] of [
        ['y', 'e5'],
        ['y', 'e6'],
        ['z', 'e7'],
        ['w', 'e8'],
      ] as const)
        input.pipeInput(key, { id }, { partition: 0 });
      d.restart();
      await d.runUntilIdle();
      expect(outcomesAt(d, 0, 4)).toEqual(['APPLIED', 'DUPLICATE']);
      expect(d.metrics().doubleEffects).toBe(0);
    },
  );
});
