import { describe, expect, it } from 'vitest';
import { attemptsStoreOf } from '../../../src/graph/stores.js';
import { AttemptsIndexedStore } from '../../../src/engine/attemptsIndex.js';
import type { Store } from '../../../src/ports/store.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { stateKeys } from '../../../src/state/stateKeys.js';

const p0 = { topic: 'payments', partition: 0 };
const p1 = { topic: 'payments', partition: 1 };
const p10 = { topic: 'payments', partition: 10 };
const record = { count: 1, errors: [{ attempt: 1, atMs: 0, error: 'boom' }] };

/** A store that counts the reads that reach it. */
function counting(inner: Store): Store & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    location: inner.location,
    get: <T>(key: string) => {
      reads.push(key);
      return inner.get<T>(key);
    },
    batch: (ops) => inner.batch(ops),
    entries: (prefix) => inner.entries(prefix),
    close: () => inner.close(),
  };
}

describe('AttemptsIndexedStore', () => {
  it('answers for the attempts of a loaded partition without a read, and reads the ones it knows of', async () => {
    const memory = await openMemoryStore();
    await memory.batch([
      { type: 'put', key: stateKeys.attempts('decide', p0, 7), value: record },
      { type: 'put', key: stateKeys.attempts('decide', p10, 3), value: record },
    ]);
    const inner = counting(memory);
    const store = new AttemptsIndexedStore(inner);
    await store.load(attemptsStoreOf('decide'), p0);
    expect(store.get(stateKeys.attempts('decide', p0, 6))).toBeUndefined();
    expect(inner.reads).toEqual([]);
    expect(store.get(stateKeys.attempts('decide', p0, 7))).toEqual(record);
    expect(inner.reads).toEqual([stateKeys.attempts('decide', p0, 7)]);
    // Partition 10 is not loaded (and its prefix is not partition 1's): it is read from the store.
    expect(store.get(stateKeys.attempts('decide', p10, 3))).toEqual(record);
    expect(store.get(stateKeys.attempts('decide', p1, 3))).toBeUndefined();
    expect(inner.reads).toHaveLength(3);
    // Other keys always go to the store.
    expect(store.get(stateKeys.effect('ledger', p0, 'payments/0/7'))).toBeUndefined();
    expect(inner.reads).toHaveLength(4);
    await store.close();
  });

  it('follows the puts and deletes written through it, in order', async () => {
    const inner = counting(await openMemoryStore());
    const store = new AttemptsIndexedStore(inner);
    await store.load(attemptsStoreOf('decide'), p0);
    const key = stateKeys.attempts('decide', p0, 1);
    await store.batch([{ type: 'put', key, value: record }]);
    expect(store.get(key)).toEqual(record);
    await store.batch([
      { type: 'del', key },
      { type: 'put', key: 'table/ledger/x', value: 1 },
    ]);
    inner.reads.length = 0;
    expect(store.get(key)).toBeUndefined();
    expect(inner.reads).toEqual([]);
    await store.close();
  });

  it('loads a partition again when it comes back, with what others wrote meanwhile', async () => {
    const memory = await openMemoryStore();
    const store = new AttemptsIndexedStore(memory);
    await store.load(attemptsStoreOf('decide'), p0);
    const key = stateKeys.attempts('decide', p0, 2);
    // Another worker owned the partition in between and wrote to the state directly.
    await memory.batch([{ type: 'put', key, value: record }]);
    await store.load(attemptsStoreOf('decide'), p0);
    expect(store.get(key)).toEqual(record);
    await memory.batch([{ type: 'del', key }]);
    await store.load(attemptsStoreOf('decide'), p0);
    expect(store.get(key)).toBeUndefined();
    await store.close();
  });
  it('attemptsOf answers like get of the key, reading only what a loaded partition has', async () => {
    const memory = await openMemoryStore();
    await memory.batch([
      { type: 'put', key: stateKeys.attempts('decide', p0, 7), value: record },
      { type: 'put', key: stateKeys.attempts('decide', p1, 2), value: record },
    ]);
    const inner = counting(memory);
    const store = new AttemptsIndexedStore(inner);
    await store.load(attemptsStoreOf('decide'), p0);
    expect(store.attemptsOf(attemptsStoreOf('decide'), p0, 6)).toBeUndefined();
    expect(inner.reads).toEqual([]);
    expect(store.attemptsOf(attemptsStoreOf('decide'), p0, 7)).toEqual(record);
    // Partition 1 is not loaded: read from the store.
    expect(store.attemptsOf(attemptsStoreOf('decide'), p1, 2)).toEqual(record);
    expect(inner.reads).toEqual([stateKeys.attempts('decide', p0, 7), stateKeys.attempts('decide', p1, 2)]);
    await store.batch([
      { type: 'put', key: stateKeys.attempts('decide', p0, 9), value: record },
      { type: 'del', key: stateKeys.attempts('decide', p0, 7) },
    ]);
    expect(store.attemptsOf(attemptsStoreOf('decide'), p0, 9)).toEqual(record);
    inner.reads.length = 0;
    expect(store.attemptsOf(attemptsStoreOf('decide'), p0, 7)).toBeUndefined();
    expect(inner.reads).toEqual([]);
    await store.close();
  });
});
