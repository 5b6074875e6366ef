import { describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { DriverTransaction } from '../../../testkit/driverTransaction.js';
import { deferred } from '../deferred.js';

const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe('DriverTransaction', () => {
  it('a commit waits for the running units, and units asked for meanwhile wait for the commit', async () => {
    const tx = new DriverTransaction();
    const steps: string[] = [];
    const first = deferred();
    const unitA = tx.unit(async () => {
      steps.push('A starts');
      await first.promise;
      steps.push('A ends');
    });
    await flush();
    const commit = tx.commit(async () => void steps.push('commit'));
    const unitB = tx.unit(async () => void steps.push('B runs'));
    await flush();
    expect(steps).toEqual(['A starts']);
    first.resolve();
    await Promise.all([unitA, commit, unitB]);
    expect(steps).toEqual(['A starts', 'A ends', 'commit', 'B runs']);
  });

  it('a commit hands over the records produced since the last one, an abort drops them', () => {
    const tx = new DriverTransaction();
    tx.produced([{ topic: 'out', key: 'k', value: null }]);
    expect(tx.committed().map((r) => r.topic)).toEqual(['out']);
    expect(tx.committed()).toEqual([]);
    tx.produced([{ topic: 'out', key: 'k', value: null }]);
    tx.abort();
    expect(tx.committed()).toEqual([]);
  });

  it('an abort rolls back every write since the last commit, newest first, and keeps the committed ones', async () => {
    const state = await openMemoryStore();
    const tx = new DriverTransaction();
    const write = async (ops: Parameters<typeof state.batch>[0]) => {
      tx.writing(ops, state);
      await state.batch(ops);
    };
    await write([{ type: 'put', key: 'a', value: 1 }]);
    tx.committed();
    await write([{ type: 'put', key: 'a', value: 2 }, { type: 'put', key: 'b', value: 1 }]);
    await write([{ type: 'put', key: 'a', value: 3 }, { type: 'del', key: 'b' }]);
    const { rollback, writes } = tx.abort();
    expect(writes).toHaveLength(2);
    await state.batch(rollback);
    expect(state.get('a')).toBe(1);
    expect(state.get('b')).toBeUndefined();
    expect(tx.abort().rollback).toEqual([]);
  });
});
