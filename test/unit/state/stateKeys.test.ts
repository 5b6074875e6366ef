import { describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { stateKeys } from '../../../src/state/stateKeys.js';

const tp = { topic: 'disputes', partition: 3 };

describe('stateKeys: every key is <kind>/<store>/<topic>/<partition>/<rest>', () => {
  it('scopes every kind of key by its source partition', () => {
    expect(stateKeys.effect('fx', tp, 'disputes/3/17')).toBe('effect/fx/disputes/3/disputes/3/17');
    expect(stateKeys.table('fx', tp, 'row-1')).toBe('table/fx/disputes/3/row-1');
    expect(stateKeys.attempts('decide', tp, 17)).toBe('attempts/decide-attempts/disputes/3/0000000000000017');
    expect(stateKeys.parkedKey('hold', tp, 'acct 7')).toBe('parked/hold/disputes/3/acct%207');
    expect(stateKeys.heldEvent('hold', tp, 'acct 7', 2)).toBe('held/hold/disputes/3/acct%207/0000000000000002');
    expect(stateKeys.heldIndex('hold', tp, 'disputes/3/17')).toBe('heldid/hold/disputes/3/disputes/3/17');
    expect(stateKeys.runStep('decide-runs', tp, 'disputes/3/17', 1)).toBe('run/decide-runs/disputes/3/disputes/3/17/0000000000000001');
  });

  it('encodes store names, topics and lanes, so that a / in them never shifts a segment', () => {
    const odd = { topic: 'a/b', partition: 0 };
    const key = stateKeys.heldEvent('park/1', odd, 'x/y', 5);
    expect(key).toBe('held/park%2F1/a%2Fb/0/x%2Fy/0000000000000005');
    expect(stateKeys.parse(key)).toEqual({ kind: 'held', store: 'park/1', topic: 'a/b', partition: 0, rest: 'x%2Fy/0000000000000005' });
    expect(stateKeys.partitionOf(key)).toEqual(odd);
    expect(stateKeys.storeOf(key)).toBe('park/1');
  });

  it('keeps an effect id with slashes whole in the rest of the key', () => {
    const key = stateKeys.effect('fx', tp, 'orders/12/99');
    expect(stateKeys.parse(key)).toMatchObject({ kind: 'effect', store: 'fx', partition: 3, rest: 'orders/12/99' });
  });

  it('names the store of the agent step attempts as graph/stores.ts does', () => {
    expect(stateKeys.storeOf(stateKeys.attempts('decide', tp, 1))).toBe('decide-attempts');
  });

  it('gives the store and partition of a key as parse does, taking only those apart', () => {
    const keys = [
      stateKeys.heldEvent('park/1', { topic: 'a/b', partition: 0 }, 'x/y', 5),
      stateKeys.effect('fx', tp, 'orders/12/99'),
      stateKeys.attempts('decide', { topic: 't', partition: 11 }, 4),
      stateKeys.parkedKey('hold', tp, 'acct 7'),
    ];
    for (const key of keys) {
      const { store, partition } = stateKeys.parse(key);
      expect(stateKeys.storeAndPartition(key)).toEqual({ store, partition });
      // Twice: the second answer comes from the cache of store names.
      expect(stateKeys.storeAndPartition(key)).toEqual({ store, partition });
    }
    expect(() => stateKeys.storeAndPartition('checkpoint/disputes/3')).toThrow("'checkpoint/disputes/3' is not an orderly state key");
    expect(() => stateKeys.storeAndPartition('effect/fx/disputes/x/1')).toThrow('is not an orderly state key');
    expect(() => stateKeys.storeAndPartition('effect/fx/disputes/-1/1')).toThrow('is not an orderly state key');
    expect(() => stateKeys.storeAndPartition('bogus/fx/disputes/1/1')).toThrow('is not an orderly state key');
  });

  it('refuses a key that is not one of its own, naming it', () => {
    expect(() => stateKeys.parse('checkpoint/disputes/3')).toThrow("'checkpoint/disputes/3' is not an orderly state key");
    expect(() => stateKeys.parse('effect/fx/disputes/x/1')).toThrow('is not an orderly state key');
  });

  it("lists a partition's prefixes, which hold all of its keys and none of another partition's", async () => {
    const stores = [
      { name: 'decide-attempts', kind: 'attempts' },
      { name: 'hold', kind: 'park' },
      { name: 'fx', kind: 'effects' },
      { name: 'decide-runs', kind: 'runs' },
    ] as const;
    const mine = [
      stateKeys.effect('fx', tp, 'e1'),
      stateKeys.ring('fx', tp, 7),
      stateKeys.horizon('fx', tp),
      stateKeys.table('fx', tp, 'r1'),
      stateKeys.attempts('decide', tp, 1),
      // The effect's own failed attempts, in its store.
      stateKeys.attemptsIn('fx', tp, 1),
      stateKeys.parkedKey('hold', tp, 'k'),
      stateKeys.heldEvent('hold', tp, 'k', 0),
      stateKeys.heldIndex('hold', tp, 'e1'),
      stateKeys.runStep('decide-runs', tp, 'disputes/3/1', 0),
    ];
    // Partition 30 shares the digits of 3: the trailing '/' of each prefix keeps them apart.
    const others = [
      { topic: 'disputes', partition: 30 },
      { topic: 'disputes', partition: 0 },
      { topic: 'disputes2', partition: 3 },
    ].flatMap((o) => [stateKeys.effect('fx', o, 'e1'), stateKeys.ring('fx', o, 7), stateKeys.heldEvent('hold', o, 'k', 0), stateKeys.attempts('decide', o, 1)]);
    const store = await openMemoryStore();
    await store.batch([...mine, ...others].map((key) => ({ type: 'put' as const, key, value: 1 })));
    const prefixes = stateKeys.partitionPrefixes(stores, tp);
    expect(prefixes).toHaveLength(10);
    const found = (await Promise.all(prefixes.map((p) => store.entries(p)))).flat().map(([k]) => k);
    expect(found.sort()).toEqual([...mine].sort());
    await store.close();
  });
});
