import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { fakeModel } from '../../testkit/fakeModel.js';
import { decisionTopology, outcomesAt, type Ev, type Out } from './helpers.js';
import { effect } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import { HORIZON_STEP } from '../../src/engine/effectHorizon.js';
import { openLevelStore } from '../../src/state/levelStore.js';
import { stateKeys } from '../../src/state/stateKeys.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

/** A fake model, a topology whose effect logs each run (its effect id and a counter in its state table). */
function setup(options: { effectId?: (ctx: { value: Ev }) => string; stateDir?: string; reuseStateDir?: true; effectRing?: false } = {}) {
  const model = fakeModel<Ev, unknown>({ latencyMs: 100, decide: () => ({ action: 'refund' }) });
  const applied: Array<{ id: string; effectId: string }> = [];
  /** What each run of the effect found in its state table for the events before it (`runs/<id>`). */
  const tableSeen: Array<Record<string, number | undefined>> = [];
  const topology = decisionTopology(model.decide, {
    ...(options.effectId ? { effectId: options.effectId } : {}),
    onApply: ({ event }, ctx) => {
      applied.push({ id: event.id, effectId: ctx.effectId });
      tableSeen.push({ e1: ctx.state.get<number>('runs/e1'), e2: ctx.state.get<number>('runs/e2') });
      ctx.state.put(`runs/${event.id}`, (ctx.state.get<number>(`runs/${event.id}`) ?? 0) + 1);
    },
  });
  const d = new TopologyTestDriver(topology, {
    ...(options.stateDir ? { stateDir: options.stateDir } : {}),
    ...(options.reuseStateDir ? { reuseStateDir: true } : {}),
    ...(options.effectRing === false ? { effectRing: false } : {}),
  });
  driver = d;
  return { d, model, applied, tableSeen, input: d.createInputTopic<Ev>('events'), out: d.createOutputTopic<Out>('out') };
}

describe('effects are applied once', () => {
  it('after a crash between recording and committing, a redelivered event is a DUPLICATE: no model call, no second effect, its output re-sent', async () => {
    const { d, model, applied, input, out } = setup();
    input.pipeInput('k', { id: 'e1' }, { partition: 0 });
    input.pipeInput('k', { id: 'e2' }, { partition: 0 });
    d.crash({ point: 'recorded-not-committed', nth: 2 }); // e1 recorded and sent, e2 recorded: nothing committed
    await d.runUntilIdle();
    expect(d.metrics().crashes).toBe(1);
    expect(d.committed()).toEqual([{ topic: 'events', partition: 0, offset: 0 }]);
    expect(model.stats().calls).toHaveLength(2);
    expect(out.readRecordsToList().map((r) => r.value.id)).toEqual(['e1']);

    d.restart();
    await d.runUntilIdle();

    expect(outcomesAt(d, 0, 0)).toEqual(['APPLIED', 'DUPLICATE']);
    expect(outcomesAt(d, 0, 1)).toEqual(['DUPLICATE']); // the crash came before e2's APPLIED was reported
    expect(
      d
        .history()
        .filter((h) => h.outcome === 'DUPLICATE')
        .every((h) => h.instance === 2),
    ).toBe(true);
    expect(model.stats().calls).toHaveLength(2);
    expect(d.metrics().modelCalls).toBe(2);
    expect(d.metrics().wastedModelCalls).toBe(0);
    expect(d.metrics().doubleEffects).toBe(0);
    expect(d.metrics().duplicatesPrevented).toBe(2);
    expect(d.metrics().redeliveries).toBe(2);
    expect(applied.map((a) => a.id)).toEqual(['e1', 'e2']);
    expect(d.effects().map((e) => e.effectId)).toEqual(['events/0/0', 'events/0/1']);

    // At least once: e1's output went out before the crash and again after it, with the same effect id.
    const resent = out.readRecordsToList();
    expect(resent.map((r) => [r.value.id, r.headers['orderly-effect-id']])).toEqual([
      ['e1', 'events/0/0'],
      ['e2', 'events/0/1'],
    ]);
    expect(d.committed()).toEqual([{ topic: 'events', partition: 0, offset: 2 }]);
  });

  it('after a crash between applying and recording, the effect is recorded exactly once', async () => {
    const { d, model, applied, tableSeen, input, out } = setup();
    input.pipeInput('k', { id: 'e1' }, { partition: 0 });
    input.pipeInput('k', { id: 'e2' }, { partition: 0 });
    d.crash({ point: 'effect-applied-not-recorded' });
    await d.runUntilIdle();
    expect(applied.map((a) => a.id)).toEqual(['e1']);
    expect(d.effects()).toEqual([]);
    expect(out.readRecordsToList()).toEqual([]);

    d.restart();
    await d.runUntilIdle();

    // The effect function ran twice for e1, with one effect id to pass to any outside system...
    expect(applied).toEqual([
      { id: 'e1', effectId: 'events/0/0' },
      { id: 'e1', effectId: 'events/0/0' },
      { id: 'e2', effectId: 'events/0/1' },
    ]);
    // ...but its recorded effect and its state writes landed once.
    expect(d.effects().map((e) => [e.effectId, e.instance])).toEqual([
      ['events/0/0', 2],
      ['events/0/1', 2],
    ]);
    expect(d.metrics().doubleEffects).toBe(0);
    expect(outcomesAt(d, 0, 0)).toEqual(['APPLIED']);
    expect(model.stats().calls.map((c) => c.effectId)).toEqual(['events/0/0', 'events/0/0', 'events/0/1']);
    expect(out.readValuesToList().map((v) => v.id)).toEqual(['e1', 'e2']);

    // Its state write landed once: the second run saw no trace of the first, and e2 saw one run of e1.
    expect(tableSeen).toEqual([
      { e1: undefined, e2: undefined },
      { e1: undefined, e2: undefined },
      { e1: 1, e2: undefined },
    ]);
    input.pipeInput('k', { id: 'e3' }, { partition: 0 });
    await d.runUntilIdle();
    expect(tableSeen.at(-1)).toEqual({ e1: 1, e2: 1 });
  });

  it('a declared effectId applies the same id piped twice once: the second is a DUPLICATE with no model call', async () => {
    const { d, model, applied, input, out } = setup({ effectId: ({ value }) => `dispute-${value.id}` });
    input.pipeInput('k', { id: 'd1' }, { partition: 0 });
    input.pipeInput('k', { id: 'd2' }, { partition: 0 });
    input.pipeInput('k', { id: 'd1' }, { partition: 0 }); // the producer retried: the same dispute again
    await d.runUntilIdle();

    expect(outcomesAt(d, 0, 0)).toEqual(['APPLIED']);
    expect(outcomesAt(d, 0, 2)).toEqual(['DUPLICATE']);
    expect(d.history().find((h) => h.offset === 2)!.effectId).toBe('dispute-d1');
    expect(model.stats().calls.map((c) => c.effectId)).toEqual(['dispute-d1', 'dispute-d2']);
    expect(applied.map((a) => a.effectId)).toEqual(['dispute-d1', 'dispute-d2']);
    expect(d.metrics().doubleEffects).toBe(0);
    // The duplicate re-sends the recorded output, under the same effect id.
    expect(out.readRecordsToList().map((r) => [r.value.id, r.headers['orderly-effect-id']])).toEqual([
      ['d1', 'dispute-d1'],
      ['d2', 'dispute-d2'],
      ['d1', 'dispute-d1'],
    ]);
  });
});

describe('a declared effectId, and copies of an event the producer wrote twice', () => {
  const declared = { effectId: ({ value }: { value: Ev }) => `dispute-${value.id}` };
  /** No breach of any kind: what a correct topology with declared ids must show. */
  const noBreaches = (d: TopologyTestDriver) => expect(Object.values(d.observedBreaches()).flat()).toEqual([]);

  it('a copy of a parked event ends as a DUPLICATE at its own offset; the resolution applies its twin once', async () => {
    const model = fakeModel<Ev, unknown>({ decide: (e) => (e.bad ? { action: 'garbled' } : { action: 'refund' }) });
    driver = new TopologyTestDriver(decisionTopology(model.decide, { ...declared, attempts: 2, retryDelayMs: 500 }), { commit: 'each' });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('k', { id: 'd1', bad: true });
    input.pipeInput('k', { id: 'd1', bad: true }); // the producer's retry
    input.pipeInput('k', { id: 'd2' });
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'PARKED']);
    expect(outcomesAt(driver, 0, 1)).toEqual(['DUPLICATE']);
    expect(outcomesAt(driver, 0, 2)).toEqual(['HELD']);
    // One parked event and one held: the copy is neither.
    expect((await driver.storedEntries('held/')).map(([, v]) => (v as { event: { offset: number } }).event.offset)).toEqual([0, 2]);

    await driver.resolve(0, 'k', { decision: { action: 'reject' } });
    await driver.runUntilIdle();
    expect(driver.effects().map((e) => [e.effectId, e.offset])).toEqual([
      ['dispute-d1', 0],
      ['dispute-d2', 2],
    ]);
    expect(driver.committed()[0]!.offset).toBe(3);
    noBreaches(driver);
  });

  it('a retried attempt of an event with a declared id is found recorded (no attempt-unrecorded breach)', async () => {
    let calls = 0;
    const decide = () => {
      calls += 1;
      if (calls === 1) throw new Error('the model failed once');
      return { action: 'refund' };
    };
    driver = new TopologyTestDriver(decisionTopology(decide, { ...declared, retryDelayMs: 500 }), { commit: 'each' });
    driver.createInputTopic<Ev>('events').pipeInput('k', { id: 'd1' });
    await driver.runUntilIdle();
    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'APPLIED']);
    expect(driver.metrics().unrecordedAttempts).toBe(0);
    noBreaches(driver);
  });

  // Exactly-once, the twin's output went out in a committed transaction: the copy sends nothing.
  it.each([
    ['staged', ['dispute-d0', 'dispute-d1', 'dispute-d1', 'dispute-d2']],
    ['exactlyOnce', ['dispute-d0', 'dispute-d1', 'dispute-d2']],
  ] as const)("%s: a copy right behind its twin sends no output before its twin's, nor before the twin is durable", async (mode, outputs) => {
    const model = fakeModel<Ev, unknown>({ decide: () => ({ action: 'refund' }) });
    driver = new TopologyTestDriver(decisionTopology(model.decide, { ...declared, maxInFlight: 3 }), { mode, commit: 'each' });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('k', { id: 'd0' });
    input.pipeInput('k', { id: 'd1' });
    input.pipeInput('k', { id: 'd1' }); // the copy: its twin's effect has landed, not yet durable
    input.pipeInput('k', { id: 'd2' });
    await driver.runUntilIdle();
    expect(
      driver
        .createOutputTopic<Out>('out')
        .readRecordsToList()
        .map((r) => r.headers['orderly-effect-id']),
    ).toEqual(outputs);
    expect(driver.history().map((h) => [h.offset, h.outcome])).toEqual([
      [0, 'APPLIED'],
      [1, 'APPLIED'],
      [2, 'DUPLICATE'],
      [3, 'APPLIED'],
    ]);
    expect(model.stats().calls).toHaveLength(3);
    noBreaches(driver);
  });
});

describe("an effect's state table", () => {
  it('is visible to later events of the same key, and kept per row', async () => {
    interface Txn {
      readonly account: string;
      readonly amount: number;
    }
    const topology = stream<Txn>('txns')
      .keyedSerial({ maxInFlight: 2 })
      .agentStep('approve', async (t: Txn) => ({ approved: t.amount < 100 }))
      .park({ attempts: 1 })
      .applyOnce(
        effect('balances', ({ event, decision }: { event: Txn; decision: { approved: boolean } }, { state }) => {
          const before = state.get<number>(event.account) ?? 0;
          const after = decision.approved ? before + event.amount : before;
          state.put(event.account, after);
          const seen = (state.get<number>(`${event.account}/events`) ?? 0) + 1;
          state.put(`${event.account}/events`, seen);
          return { account: event.account, before, after, seen };
        }),
      )
      .to('balances-out')
      .build();
    driver = new TopologyTestDriver(topology, { partitions: 2 });
    const input = driver.createInputTopic<Txn>('txns');
    for (const [account, amount] of [
      ['acc-1', 10],
      ['acc-2', 5],
      ['acc-1', 20],
      ['acc-1', 500],
      ['acc-2', 7],
      ['acc-1', 1],
    ] as const) {
      input.pipeInput(account, { account, amount });
    }
    await driver.runUntilIdle();

    const out = driver.createOutputTopic<{ account: string; before: number; after: number; seen: number }>('balances-out').readValuesToList();
    expect(out.filter((o) => o.account === 'acc-1')).toEqual([
      { account: 'acc-1', before: 0, after: 10, seen: 1 },
      { account: 'acc-1', before: 10, after: 30, seen: 2 },
      { account: 'acc-1', before: 30, after: 30, seen: 3 },
      { account: 'acc-1', before: 30, after: 31, seen: 4 },
    ]);
    expect(out.filter((o) => o.account === 'acc-2')).toEqual([
      { account: 'acc-2', before: 0, after: 5, seen: 1 },
      { account: 'acc-2', before: 5, after: 12, seen: 2 },
    ]);
  });

  it('keeps its writes across a crash and a restart over the same LevelDB state', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'orderly-table-'));
    try {
      const { d, applied, tableSeen, input, out } = setup({ stateDir });
      input.pipeInput('k', { id: 'e1' }, { partition: 0 });
      await d.runUntilIdle(); // applied, and committed at 5000
      d.crash();
      d.restart();
      input.pipeInput('k', { id: 'e1' }, { partition: 0 }); // a new event (a new offset) with the same id
      await d.runUntilIdle();
      expect(applied.map((a) => a.id)).toEqual(['e1', 'e1']);
      expect(tableSeen).toEqual([
        { e1: undefined, e2: undefined },
        { e1: 1, e2: undefined },
      ]);
      expect(out.readValuesToList()).toHaveLength(2);
      expect(d.metrics().redeliveries).toBe(0);
      await d.close();
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });
  it('state recorded before effect horizons existed: a redelivered event is still looked up and is a DUPLICATE', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'orderly-horizon-'));
    try {
      // An effect record of offset 0 with no horizon beside it, as an older version left it.
      const old = await openLevelStore(stateDir);
      const tp = { topic: 'events', partition: 0 };
      const record = { topic: 'events', partition: 0, offset: 0, key: 'k', effectId: 'events/0/0', appliedAtMs: 0, outputs: [] };
      await old.batch([{ type: 'put', key: stateKeys.effect('fx', tp, 'events/0/0'), value: record }]);
      await old.close();
      const { d, model, applied, input } = setup({ stateDir, reuseStateDir: true });
      input.pipeInput('k', { id: 'e1' }, { partition: 0 });
      input.pipeInput('k', { id: 'e2' }, { partition: 0 });
      await d.runUntilIdle();
      expect(outcomesAt(d, 0, 0)).toEqual(['DUPLICATE']);
      expect(outcomesAt(d, 0, 1)).toEqual(['APPLIED']);
      expect(applied.map((a) => a.id)).toEqual(['e2']);
      expect(model.stats().calls).toHaveLength(1);
      // The old record is pruned by now (the committed offset passed it), and e2's is in the ring:
      // still no horizon, so a crash after e3 is recorded and a restart must still look it up.
      expect(await d.storedEntries(stateKeys.effectPrefix('fx'))).toEqual([]);
      input.pipeInput('k', { id: 'e3' }, { partition: 0 });
      d.crash({ point: 'recorded-not-committed', nth: 1 });
      await d.runUntilIdle();
      d.restart();
      await d.runUntilIdle();
      expect(outcomesAt(d, 0, 2)).toEqual(['DUPLICATE']);
      expect(applied.map((a) => a.id)).toEqual(['e2', 'e3']);
      expect(d.metrics().doubleEffects).toBe(0);
      await d.close();
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  it('an engine that records by effect id (effectRing: false) still finds a record in the ring, as one with rings left it', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'orderly-ring-'));
    try {
      // Offset 0 applied by a worker with rings, not committed; its horizon past it.
      const before = await openLevelStore(stateDir);
      const tp = { topic: 'events', partition: 0 };
      const record = { topic: 'events', partition: 0, offset: 0, key: 'k', effectId: 'events/0/0', appliedAtMs: 0, outputs: [] };
      await before.batch([
        { type: 'put', key: stateKeys.ring('fx', tp, 0), value: record },
        { type: 'put', key: stateKeys.horizon('fx', tp), value: HORIZON_STEP },
      ]);
      await before.close();
      const { d, model, applied, input } = setup({ stateDir, reuseStateDir: true, effectRing: false });
      input.pipeInput('k', { id: 'e1' }, { partition: 0 });
      input.pipeInput('k', { id: 'e2' }, { partition: 0 });
      await d.runUntilIdle();
      expect(outcomesAt(d, 0, 0)).toEqual(['DUPLICATE']);
      expect(applied.map((a) => a.id)).toEqual(['e2']);
      expect(model.stats().calls).toHaveLength(1);
      // ...and records e2 by its effect id (pruned since: the committed offset passed it).
      expect(await d.storedEntries(stateKeys.ringPrefix('fx'))).toHaveLength(1);
      await d.close();
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  it('a new partition keeps an effect horizon past every offset received; after a restart the redelivered events are looked up', async () => {
    const stateDir = await mkdtemp(join(tmpdir(), 'orderly-horizon-'));
    try {
      const { d, applied, input } = setup({ stateDir });
      input.pipeInput('k', { id: 'e1' }, { partition: 0 });
      input.pipeInput('k', { id: 'e2' }, { partition: 0 });
      d.crash({ point: 'recorded-not-committed', nth: 2 });
      await d.runUntilIdle();
      d.restart();
      await d.runUntilIdle();
      expect(outcomesAt(d, 0, 1)).toEqual(['DUPLICATE']);
      expect(applied.map((a) => a.id)).toEqual(['e1', 'e2']);
      expect(d.metrics().doubleEffects).toBe(0);
      await d.close();
      const state = await openLevelStore(stateDir);
      expect(state.get(stateKeys.horizon('fx', { topic: 'events', partition: 0 }))).toBe(HORIZON_STEP);
      await state.close();
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});
