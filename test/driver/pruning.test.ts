import { afterEach, describe, expect, it } from 'vitest';
import { effect } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import type { EffectRecord } from '../../src/engine/outputs.js';
import type { StoreOp } from '../../src/ports/store.js';
import { stateKeys } from '../../src/state/stateKeys.js';
import { driverModes, TopologyTestDriver, type DriverMode } from '../../testkit/driver.js';
import { fakeModel } from '../../testkit/fakeModel.js';
import { Decision, decisionTopology, type Ev } from './helpers.js';

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

/** The offsets of the effect records a restart would find, and of those pruned (deleted once durable). */
async function effectOffsets(d: TopologyTestDriver): Promise<{ stored: number[]; pruned: number[] }> {
  const stored = (await d.storedEntries<EffectRecord>(stateKeys.effectPrefix('fx'))).map(([, r]) => r.offset).sort((a, b) => a - b);
  const pruned = [...d.prunedEffectRecords().values()].map((r) => r.offset).sort((a, b) => a - b);
  return { stored, pruned };
}

describe.each(driverModes)('effect records with ids derived from offsets (%s)', (mode: DriverMode) => {
  it('are pruned once the committed offset is past them; those at or above it stay', async () => {
    const d = (driver = new TopologyTestDriver(decisionTopology(model().decide, { maxInFlight: 4 }), { mode, commit: { everyMs: 1_000 } }));
    const input = d.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'e0' }, { partition: 0 });
    input.pipeInput('slow', { id: 'e1', ms: 60_000 }, { partition: 0 });
    input.pipeInput('b', { id: 'e2' }, { partition: 0 });
    input.pipeInput('c', { id: 'e3' }, { partition: 0 });
    await d.advanceWallClockTime(10_000);
    // e1 holds the committed offset at 1: e2 and e3 finished above it, their records stay (a crash may redeliver them).
    expect(d.committed()).toMatchObject([{ topic: 'events', partition: 0, offset: 1 }]);
    expect(await effectOffsets(d)).toEqual({ stored: [2, 3], pruned: [0] });

    await d.runUntilIdle();
    expect(d.committed()).toMatchObject([{ topic: 'events', partition: 0, offset: 4 }]);
    expect(await effectOffsets(d)).toEqual({ stored: [], pruned: [0, 1, 2, 3] });
    expect(d.metrics().doubleEffects).toBe(0);
  });

  it('left behind by a worker that stopped before pruning them are pruned when the partition is assigned again', async () => {
    let keepPrunes = true;
    const dropWrite = (op: StoreOp) => keepPrunes && op.type === 'del' && op.key.startsWith('effect/');
    const d = (driver = new TopologyTestDriver(decisionTopology(model().decide, { maxInFlight: 4 }), {
      mode,
      commit: { everyMs: 1_000 },
      faults: { dropWrite },
    }));
    const input = d.createInputTopic<Ev>('events');
    for (const id of ['e0', 'e1', 'e2']) input.pipeInput(id, { id }, { partition: 0 });
    await d.runUntilIdle();
    expect(d.committed()).toEqual([{ topic: 'events', partition: 0, offset: 3 }]);
    expect(await effectOffsets(d)).toEqual({ stored: [0, 1, 2], pruned: [] });

    d.crash();
    keepPrunes = false;
    d.restart();
    await d.runUntilIdle();
    expect(await effectOffsets(d)).toEqual({ stored: [], pruned: [0, 1, 2] });
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
    expect(await effectOffsets(d)).toEqual({ stored: [], pruned: [0, 1, 2] });
  });
});
