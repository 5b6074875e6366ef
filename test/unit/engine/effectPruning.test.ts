import { describe, expect, it } from 'vitest';
import { EffectPruning } from '../../../src/engine/effectPruning.js';
import type { EffectRecord } from '../../../src/engine/outputs.js';
import type { StoreOp } from '../../../src/ports/store.js';
import { openMemoryStore, type LocalStore } from '../../../src/state/levelStore.js';
import { stateKeys } from '../../../src/state/stateKeys.js';

const tp = { topic: 'in', partition: 3 };
const offsetId = (offset: number) => `in/3/${offset}`;

function record(offset: number, effectId: string, appliedAtMs = 0): EffectRecord {
  return { ...tp, offset, key: 'k', effectId, appliedAtMs, outputs: [] };
}

async function storeWith(records: EffectRecord[], held: string[] = []): Promise<LocalStore> {
  const store = await openMemoryStore();
  await store.batch([
    ...records.map((r): StoreOp => ({ type: 'put', key: stateKeys.effect('fx', tp, r.effectId), value: r })),
    ...held.map((effectId, seq): StoreOp => ({ type: 'put', key: stateKeys.heldIndex('hold', tp, effectId), value: { lane: 'k', seq } })),
  ]);
  return store;
}

const deleted = (ops: readonly StoreOp[]) =>
  ops.map((op) => (op.type === 'del' ? op.key.slice(stateKeys.effectPartitionPrefix('fx', tp).length) : `put ${op.key}`));

describe('EffectPruning, ids derived from offsets', () => {
  it('prunes at assignment the records below the committed offset, and those at or above it once the committed offset passes them', async () => {
    const store = await storeWith([0, 1, 2, 5, 6].map((o) => record(o, offsetId(o))));
    const pruning = new EffectPruning({ store, effectStore: 'fx', parkStore: 'hold', tp, idRetentionMs: undefined });
    expect(deleted(await pruning.load(5))).toEqual([offsetId(0), offsetId(1), offsetId(2)]);
    expect(await pruning.prunable(5, 0)).toEqual([]);
    expect(deleted(await pruning.prunable(6, 0))).toEqual([offsetId(5)]);
    expect(deleted(await pruning.prunable(100, 0))).toEqual([offsetId(6)]);
    expect(await pruning.prunable(200, 0)).toEqual([]);
  });

  it('prunes nothing at assignment when nothing was committed', async () => {
    const store = await storeWith([record(0, offsetId(0))]);
    const pruning = new EffectPruning({ store, effectStore: 'fx', parkStore: undefined, tp, idRetentionMs: undefined });
    expect(await pruning.load(undefined)).toEqual([]);
    expect(deleted(await pruning.prunable(1, 0))).toEqual([offsetId(0)]);
  });

  it('keeps the record of an event still held behind a parked key (its replay looks it up) until it is released', async () => {
    const store = await storeWith([record(1, offsetId(1)), record(2, offsetId(2))], [offsetId(1)]);
    const pruning = new EffectPruning({ store, effectStore: 'fx', parkStore: 'hold', tp, idRetentionMs: undefined });
    expect(deleted(await pruning.load(10))).toEqual([offsetId(2)]);
    expect(await pruning.prunable(10, 0)).toEqual([]);
    await store.batch([{ type: 'del', key: stateKeys.heldIndex('hold', tp, offsetId(1)) }]);
    expect(deleted(await pruning.prunable(10, 0))).toEqual([offsetId(1)]);
  });

  it('follows the records the engine writes: each pruned once, when the committed offset is past it', async () => {
    const store = await storeWith([]);
    const pruning = new EffectPruning({ store, effectStore: 'fx', parkStore: undefined, tp, idRetentionMs: undefined });
    await pruning.load(0);
    for (const o of [4, 2, 3, 7]) pruning.recorded(o, stateKeys.effect('fx', tp, offsetId(o)));
    expect(deleted(await pruning.prunable(4, 0))).toEqual([offsetId(2), offsetId(3)]);
    expect(deleted(await pruning.prunable(8, 0))).toEqual([offsetId(4), offsetId(7)]);
  });

  it('reads the leftovers of a large partition in pages', async () => {
    const records = Array.from({ length: 2_500 }, (_, o) => record(o, offsetId(o)));
    const store = await storeWith(records);
    const pruning = new EffectPruning({ store, effectStore: 'fx', parkStore: undefined, tp, idRetentionMs: undefined });
    expect((await pruning.load(2_400)).length).toBe(2_400);
    expect((await pruning.prunable(2_500, 0)).length).toBe(100);
  });
});

describe('EffectPruning, declared effect ids', () => {
  const retention = 60_000;

  it('keeps a record within the window and prunes it past it, once below the committed offset', async () => {
    const store = await storeWith([record(0, 'order-a', 1_000), record(1, 'order-b', 30_000), record(9, 'order-c', 1_000)]);
    const pruning = new EffectPruning({ store, effectStore: 'fx', parkStore: undefined, tp, idRetentionMs: retention });
    const prune = async (committed: number, nowMs: number) => {
      const ops = await pruning.prunable(committed, nowMs);
      await store.batch(ops);
      return deleted(ops);
    };
    expect(await pruning.load(5)).toEqual([]);
    // Within the window: kept.
    expect(await prune(5, 60_000)).toEqual([]);
    // A sweep starts at most every tenth of the window: 6 s later, order-a is past its window; order-c is not committed yet.
    expect(await prune(5, 63_000)).toEqual([]);
    expect(await prune(5, 66_000)).toEqual(['order-a']);
    expect(await prune(10, 96_000)).toEqual(['order-b', 'order-c']);
  });

  it('sweeps a partition larger than a page over several rounds, and keeps ahead of the records written', async () => {
    const records = Array.from({ length: 2_500 }, (_, i) => record(i, `order-${String(i).padStart(5, '0')}`, 0));
    const store = await storeWith(records);
    const pruning = new EffectPruning({ store, effectStore: 'fx', parkStore: undefined, tp, idRetentionMs: retention });
    const rounds: number[] = [];
    for (let round = 0; round < 3; round++) {
      const ops = await pruning.prunable(10_000, 100_000);
      await store.batch(ops);
      rounds.push(ops.length);
    }
    expect(rounds).toEqual([1_000, 1_000, 500]);
    expect(await store.entries(stateKeys.effectPartitionPrefix('fx', tp))).toEqual([]);
  });
});
