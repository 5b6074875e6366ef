import { describe, expect, it } from 'vitest';
import { StateWriter } from '../../../src/engine/stateWriter.js';
import type { Store, StoreOp } from '../../../src/ports/store.js';

/** A store whose batches wait until the test releases them, and that records each batch. */
function slowStore() {
  const batches: StoreOp[][] = [];
  const pending: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  const store: Store = {
    location: 'test',
    get: () => undefined,
    batch: (ops) => {
      batches.push([...ops]);
      return new Promise<void>((resolve, reject) => pending.push({ resolve, reject }));
    },
    entries: async () => [],
    close: async () => {},
  };
  return { store, batches, pending };
}

const put = (key: string): StoreOp => ({ type: 'put', key, value: key });
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('StateWriter', () => {
  it('gathers the writes asked for during a batch into the next one, in order', async () => {
    const { store, batches, pending } = slowStore();
    const writer = new StateWriter(store);
    const settled: string[] = [];
    void writer.write([put('a1'), put('a2')]).then(() => settled.push('a'));
    void writer.write([put('b')]).then(() => settled.push('b'));
    void writer.write([put('c')]).then(() => settled.push('c'));
    await tick();
    expect(batches).toEqual([[put('a1'), put('a2')]]);
    pending.shift()!.resolve();
    await tick();
    expect(settled).toEqual(['a']);
    expect(batches[1]).toEqual([put('b'), put('c')]);
    pending.shift()!.resolve();
    await tick();
    expect(settled).toEqual(['a', 'b', 'c']);
    expect(batches).toHaveLength(2);
  });

  it('rejects every write of a failed batch, and goes on with the next', async () => {
    const { store, batches, pending } = slowStore();
    const writer = new StateWriter(store);
    const first = writer.write([put('a')]);
    const second = writer.write([put('b')]);
    const third = writer.write([put('c')]);
    await tick();
    pending.shift()!.resolve();
    await first;
    await tick();
    pending.shift()!.reject(new Error('disk full'));
    await expect(second).rejects.toThrow('disk full');
    await expect(third).rejects.toThrow('disk full');
    const fourth = writer.write([put('d')]);
    await tick();
    expect(batches.at(-1)).toEqual([put('d')]);
    pending.shift()!.resolve();
    await expect(fourth).resolves.toBeUndefined();
  });
});
