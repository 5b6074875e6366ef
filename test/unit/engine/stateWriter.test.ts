import { describe, expect, it } from 'vitest';
import { StateWriter } from '../../../src/engine/stateWriter.js';
import type { Store, StoreOp } from '../../../src/ports/store.js';
import { deferred, type Deferred } from '../deferred.js';

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

/** A store that stages its batches (as the changelog store does): the test lands each and makes it durable. */
function stagingStore() {
  const batches: StoreOp[][] = [];
  const staged: Array<{ land: Deferred; durable: Deferred }> = [];
  const store: Store = {
    location: 'test',
    get: () => undefined,
    batch: () => Promise.reject(new Error('a staging store is only staged')),
    stage: (ops) => {
      batches.push([...ops]);
      const land = deferred();
      const durable = deferred();
      staged.push({ land, durable });
      const landed = land.promise;
      return { landed, durable: landed.then(() => durable.promise) };
    },
    entries: async () => [],
    close: async () => {},
  };
  return { store, batches, staged };
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

  it('stage, with a store that does not stage: lands and makes durable together, when the batch is written', async () => {
    const { store, pending } = slowStore();
    const writer = new StateWriter(store);
    expect(writer.pipelined).toBe(false);
    const events: string[] = [];
    const a = writer.stage([put('a')]);
    void a.landed.then(() => events.push('landed'));
    void a.durable.then(() => events.push('durable'));
    await tick();
    expect(events).toEqual([]);
    pending.shift()!.resolve();
    await tick();
    expect(events).toEqual(['landed', 'durable']);
  });

  describe('with a store that stages its batches', () => {
    it('stages the next batch once the previous one landed, before it is durable', async () => {
      const { store, batches, staged } = stagingStore();
      const writer = new StateWriter(store);
      const settled: string[] = [];
      void writer.write([put('a')]).then(() => settled.push('a'));
      void writer.write([put('b')]).then(() => settled.push('b'));
      await tick();
      // Not before `a` has landed: local writes land in order.
      expect(batches).toEqual([[put('a')]]);
      staged[0]!.land.resolve();
      await tick();
      expect(batches).toEqual([[put('a')], [put('b')]]);
      expect(settled).toEqual([]);
      void writer.write([put('c')]).then(() => settled.push('c'));
      staged[1]!.land.resolve();
      await tick();
      expect(batches).toEqual([[put('a')], [put('b')], [put('c')]]);
      expect(settled).toEqual([]);
    });

    it('settles a write only when its batch is durable, and never before an earlier batch', async () => {
      const { store, staged } = stagingStore();
      const writer = new StateWriter(store);
      const settled: string[] = [];
      void writer.write([put('a')]).then(() => settled.push('a'));
      await tick();
      staged[0]!.land.resolve();
      void writer.write([put('b')]).then(() => settled.push('b'));
      await tick();
      staged[1]!.land.resolve();
      staged[1]!.durable.resolve();
      await tick();
      // `b` is durable, `a` is not yet: `b`'s writers wait.
      expect(settled).toEqual([]);
      staged[0]!.durable.resolve();
      await tick();
      expect(settled).toEqual(['a', 'b']);
    });

    it('rejects the writes of a batch that failed to become durable, and settles the later ones', async () => {
      const { store, staged } = stagingStore();
      const writer = new StateWriter(store);
      const first = writer.write([put('a')]);
      await tick();
      staged[0]!.land.resolve();
      const second = writer.write([put('b')]);
      await tick();
      staged[1]!.land.resolve();
      staged[1]!.durable.resolve();
      // Failing while `b` is waiting in the chain: no unhandled rejection, `a` alone fails.
      staged[0]!.durable.reject(new Error('broker down'));
      await expect(first).rejects.toThrow('broker down');
      await expect(second).resolves.toBeUndefined();
    });

    it('stage: lands a write with its batch, and makes it durable when the batch is and every earlier one settled', async () => {
      const { store, staged } = stagingStore();
      const writer = new StateWriter(store);
      expect(writer.pipelined).toBe(true);
      const events: string[] = [];
      const a = writer.stage([put('a')]);
      void a.landed.then(() => events.push('a landed'));
      void a.durable.then(() => events.push('a durable'));
      await tick();
      const b = writer.stage([put('b')]);
      void b.landed.then(() => events.push('b landed'));
      void b.durable.then(() => events.push('b durable'));
      staged[0]!.land.resolve();
      await tick();
      expect(events).toEqual(['a landed']);
      staged[1]!.land.resolve();
      staged[1]!.durable.resolve();
      await tick();
      expect(events).toEqual(['a landed', 'b landed']);
      staged[0]!.durable.resolve();
      await tick();
      expect(events).toEqual(['a landed', 'b landed', 'a durable', 'b durable']);
    });

    it('stage: a batch that fails to land rejects both steps, with no unhandled rejection when only `landed` is awaited', async () => {
      const { store, staged } = stagingStore();
      const writer = new StateWriter(store);
      const a = writer.stage([put('a')]);
      await tick();
      staged[0]!.land.reject(new Error('disk full'));
      await expect(a.landed).rejects.toThrow('disk full');
      await expect(a.durable).rejects.toThrow('disk full');
    });

    it('goes on with the next batch when one fails to land, and rejects its writes', async () => {
      const { store, batches, staged } = stagingStore();
      const writer = new StateWriter(store);
      const first = writer.write([put('a')]);
      const second = writer.write([put('b')]);
      await tick();
      staged[0]!.land.reject(new Error('disk full'));
      await expect(first).rejects.toThrow('disk full');
      await tick();
      expect(batches).toEqual([[put('a')], [put('b')]]);
      staged[1]!.land.resolve();
      staged[1]!.durable.resolve();
      await expect(second).resolves.toBeUndefined();
    });
  });
});
