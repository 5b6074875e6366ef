import { describe, expect, it } from 'vitest';
import { eventEndFor } from '../../../src/engine/eventEnd.js';
import { StateWriter } from '../../../src/engine/stateWriter.js';
import type { Log, OutRecord } from '../../../src/ports/log.js';
import type { Store, StoreOp } from '../../../src/ports/store.js';
import { deferred, type Deferred } from '../deferred.js';

const tp = { topic: 'events', partition: 0 };
const put = (key: string): StoreOp => ({ type: 'put', key, value: key });
const output = (key: string): OutRecord => ({ topic: 'out', key, value: Buffer.from(key) });
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A staging store whose first batch lands and becomes durable when the test says (or fails to land). */
function stagingStore() {
  const staged: Array<{ land: Deferred; durable: Deferred }> = [];
  const store: Store = {
    location: 'test',
    get: () => undefined,
    batch: () => Promise.reject(new Error('a staging store is only staged')),
    stage: () => {
      const land = deferred();
      const durable = deferred();
      staged.push({ land, durable });
      return { landed: land.promise, durable: land.promise.then(() => durable.promise) };
    },
    entries: async () => [],
    close: async () => {},
  };
  return { store, staged };
}

function loggingLog() {
  const calls: string[][] = [];
  const log = { produce: async (records: readonly OutRecord[]) => void calls.push(records.map((r) => r.key!)) } as unknown as Log;
  return { log, calls };
}

describe('the staged end', () => {
  it('sends the outputs of the events of one batch in one call, in the order they ended, once the batch is durable', async () => {
    const { store, staged } = stagingStore();
    const { log, calls } = loggingLog();
    const end = eventEndFor(log, new StateWriter(store));
    expect(end.kind).toBe('staged');
    // a goes alone into the first batch; b and c gather into the next while it is written.
    const a = end.end(tp, [put('a')], [output('a1')]);
    const b = end.end(tp, [put('b')], [output('b1'), output('b2')]);
    const c = end.end(tp, [put('c')], [output('c1')]);
    staged[0]!.land.resolve();
    const landedA = await a;
    await flush();
    staged[1]!.land.resolve();
    const [landedB, landedC] = await Promise.all([b, c]);
    expect(calls).toEqual([]);
    staged[0]!.durable.resolve();
    await landedA!.durable;
    expect(calls).toEqual([['a1']]);
    staged[1]!.durable.resolve();
    await Promise.all([landedB!.durable, landedC!.durable]);
    expect(calls).toEqual([['a1'], ['b1', 'b2', 'c1']]);
  });

  it('sends nothing of a batch that fails to land, and its events end with the failure', async () => {
    const { store, staged } = stagingStore();
    const { log, calls } = loggingLog();
    const end = eventEndFor(log, new StateWriter(store));
    const a = end.end(tp, [put('a')], [output('a1')]);
    staged[0]!.land.reject(new Error('disk full'));
    await expect(a).rejects.toThrow('disk full');
    // An output batch left without a waiter must not surface as an unhandled rejection either.
    await flush();
    expect(calls).toEqual([]);
  });
});

describe('the staged end of an event that writes no state (a DUPLICATE)', () => {
  /** A staged end with one event's batch landed (its outputs `a1`) and not durable yet. */
  async function oneBatchLanded() {
    const { store, staged } = stagingStore();
    const { log, calls } = loggingLog();
    const end = eventEndFor(log, new StateWriter(store));
    const a = end.end(tp, [put('a')], [output('a1')]);
    staged[0]!.land.resolve();
    const landedA = (await a)!;
    return { end, staged, calls, landedA };
  }

  it('sends its outputs with the unsent batch, after the outputs of the events before it, and at once when no batch waits', async () => {
    const { end, staged, calls, landedA } = await oneBatchLanded();
    // The copy of a's event found a's effect record, which is not durable yet: its outputs wait behind a1.
    const copy = await end.end(tp, [], [output('a1-again')]);
    await flush();
    expect(calls).toEqual([]);
    staged[0]!.durable.resolve();
    await Promise.all([landedA.durable, copy!.durable]);
    expect(calls).toEqual([['a1', 'a1-again']]);
    // The batch is sent: nothing can join it, so a later copy's outputs go out on their own.
    const later = await end.end(tp, [], [output('a1-third')]);
    await later!.durable;
    expect(calls).toEqual([['a1', 'a1-again'], ['a1-third']]);
  });

  it('a replayed event found done sends its stored outputs behind the unsent batch, then removes it from its parked key', async () => {
    const { end, staged, calls } = await oneBatchLanded();
    let removals = 0;
    const replay = end.endReplay(tp, [], [output('r1')], () => {
      removals++;
      return [put('parked-removal')];
    });
    await flush();
    expect(calls).toEqual([]);
    expect(removals).toBe(0);
    staged[0]!.durable.resolve();
    await flush();
    expect(calls).toEqual([['a1', 'r1']]);
    // The removal goes in a batch of its own once the outputs are sent.
    await flush();
    expect(removals).toBe(1);
    staged[1]!.land.resolve();
    staged[1]!.durable.resolve();
    await replay;
    expect(staged).toHaveLength(2);
  });

  it('does not join a batch that never became durable: its outputs go out on their own', async () => {
    const { end, staged, calls, landedA } = await oneBatchLanded();
    staged[0]!.durable.reject(new Error('changelog write failed'));
    await expect(landedA.durable).rejects.toThrow('changelog write failed');
    const copy = await end.end(tp, [], [output('b1')]);
    await copy!.durable;
    expect(calls).toEqual([['b1']]);
  });
});
