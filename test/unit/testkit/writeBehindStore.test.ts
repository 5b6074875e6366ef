import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store, StoreOp } from '../../../src/ports/store.js';
import { openLevelStore } from '../../../src/state/levelStore.js';
import { decodeLocalValue } from '../../../src/state/storedFormat.js';
import { WriteBehindStore } from '../../../testkit/writeBehindStore.js';

/** A store whose batches wait until the test releases them. */
function slowStore() {
  const rows = new Map<string, unknown>();
  const batches: StoreOp[][] = [];
  const pending: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  const store: Store = {
    location: 'slow',
    get: <T>(key: string) => rows.get(key) as T | undefined,
    batch: (ops) => {
      batches.push([...ops]);
      return new Promise<void>((resolve, reject) =>
        pending.push({
          resolve: () => {
            for (const op of ops) {
              if (op.type === 'put') rows.set(op.key, decodeLocalValue(op.key, op.value as string));
              else rows.delete(op.key);
            }
            resolve();
          },
          reject,
        }),
      );
    },
    entries: async <T>(prefix: string) => [...rows].filter(([k]) => k.startsWith(prefix)).sort() as Array<[string, T]>,
    close: async () => {},
  };
  return { store, rows, batches, pending };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('WriteBehindStore', () => {
  it('shows a batch to reads at once, before the store has it, and writes the batches in order', async () => {
    const { store, rows, batches, pending } = slowStore();
    const state = new WriteBehindStore(store);
    await state.batch([{ type: 'put', key: 'a', value: { n: 1 } }]);
    await state.batch([
      { type: 'put', key: 'a', value: { n: 2 } },
      { type: 'put', key: 'b', value: true },
    ]);
    await state.batch([{ type: 'del', key: 'b' }]);
    expect(state.get('a')).toEqual({ n: 2 });
    expect(state.get('b')).toBeUndefined();
    expect(rows.size).toBe(0);
    // One physical batch at a time: the second holds every write accepted meanwhile, in order.
    expect(batches).toHaveLength(1);
    pending.shift()!.resolve();
    await tick();
    expect(batches).toHaveLength(2);
    expect(batches[1]!.map((op) => [op.type, op.key])).toEqual([
      ['put', 'a'],
      ['put', 'b'],
      ['del', 'b'],
    ]);
    // The first write is in the store; the view still answers with the newer one.
    expect(rows.get('a')).toEqual({ n: 1 });
    expect(state.get('a')).toEqual({ n: 2 });
    pending.shift()!.resolve();
    await state.drained();
    expect(rows.get('a')).toEqual({ n: 2 });
    expect(rows.has('b')).toBe(false);
    expect(state.get('a')).toEqual({ n: 2 });
  });

  it('keeps the value as it was when the batch was accepted, and gives each read its own copy', async () => {
    const { store, rows, pending } = slowStore();
    const state = new WriteBehindStore(store);
    const value = { items: [1] };
    await state.batch([{ type: 'put', key: 'k', value }]);
    value.items.push(2);
    const read = state.get<{ items: number[] }>('k')!;
    read.items.push(3);
    expect(state.get('k')).toEqual({ items: [1] });
    pending.shift()!.resolve();
    await state.drained();
    expect(rows.get('k')).toEqual({ items: [1] });
  });

  it('refuses a batch with a null or undefined value whole, as LevelDB does', async () => {
    const { store, batches } = slowStore();
    const state = new WriteBehindStore(store);
    await expect(
      state.batch([
        { type: 'put', key: 'ok', value: 1 },
        { type: 'put', key: 'bad', value: null },
      ]),
    ).rejects.toThrow(/'bad' cannot be null/);
    expect(state.get('ok')).toBeUndefined();
    expect(batches).toHaveLength(0);
  });

  it('takes an empty batch as nothing to do', async () => {
    const { store, batches } = slowStore();
    const state = new WriteBehindStore(store);
    await state.batch([]);
    await state.drained();
    expect(batches).toHaveLength(0);
  });

  it('lets a scan and a close wait for the writes, and reports a failed write', async () => {
    const { store, pending } = slowStore();
    const state = new WriteBehindStore(store);
    await state.batch([{ type: 'put', key: 'p/1', value: 1 }]);
    const scan = state.entries('p/');
    await tick();
    pending.shift()!.resolve();
    expect(await scan).toEqual([['p/1', 1]]);

    await state.batch([{ type: 'put', key: 'p/2', value: 2 }]);
    pending.shift()!.reject(new Error('disk full'));
    await expect(state.drained()).rejects.toThrow(/slow\) failed a write: Error: disk full/);
    expect(state.failed?.message).toMatch(/disk full/);
    await expect(state.batch([{ type: 'put', key: 'p/3', value: 3 }])).rejects.toThrow(/disk full/);
  });
});

describe('WriteBehindStore over LevelDB', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orderly-writebehind-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes what openLevelStore reads back as the same values', async () => {
    const state = new WriteBehindStore(await openLevelStore(dir));
    await state.batch([
      { type: 'put', key: 'effect/x/1', value: { offset: 1, outputs: [], key: null } },
      { type: 'put', key: 'table/x/1', value: false },
      { type: 'put', key: 'table/x/2', value: 'text' },
    ]);
    await state.batch([{ type: 'del', key: 'table/x/2' }]);
    await state.close();
    const reopened = await openLevelStore(dir);
    try {
      expect(reopened.get('effect/x/1')).toEqual({ offset: 1, outputs: [], key: null });
      expect(reopened.get('table/x/1')).toBe(false);
      expect(reopened.get('table/x/2')).toBeUndefined();
    } finally {
      await reopened.close();
    }
    // In the stored format LevelStore writes (version 2), not as bare JSON (read as version 1).
    const raw = new ClassicLevel<string, string>(dir);
    try {
      expect(await raw.get('table/x/1')).toBe('v2:false');
    } finally {
      await raw.close();
    }
  });
});
