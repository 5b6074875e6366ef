import { describe, expect, it } from 'vitest';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { LandedOverlay } from '../../../testkit/landedOverlay.js';

describe('LandedOverlay', () => {
  it('reads landed writes before the durable state, and the durable state once a batch is settled', async () => {
    const durable = await openMemoryStore();
    await durable.batch([
      { type: 'put', key: 'a', value: 1 },
      { type: 'put', key: 'b', value: 1 },
    ]);
    const overlay = new LandedOverlay(() => durable);
    const first = overlay.land([
      { type: 'put', key: 'a', value: 2 },
      { type: 'del', key: 'b' },
    ]);
    const second = overlay.land([{ type: 'put', key: 'a', value: 3 }]);
    expect(overlay.get('a')).toBe(3);
    expect(overlay.get('b')).toBeUndefined();
    expect(durable.get('a')).toBe(1);
    // The first batch made durable: its write of a is older than the second's, which still shows.
    await durable.batch(overlay.ops(first));
    overlay.settle(first);
    expect(overlay.get('a')).toBe(3);
    expect(overlay.pending).toBe(1);
    overlay.settle(second);
    expect(overlay.get('a')).toBe(2);
    await durable.close();
  });

  it('scans the durable entries with the landed writes over them, in key order and up to a limit', async () => {
    const durable = await openMemoryStore();
    await durable.batch([
      { type: 'put', key: 'p/1', value: 'old' },
      { type: 'put', key: 'p/3', value: 'gone' },
      { type: 'put', key: 'q/1', value: 'other' },
    ]);
    const overlay = new LandedOverlay(() => durable);
    overlay.land([
      { type: 'put', key: 'p/2', value: 'new' },
      { type: 'del', key: 'p/3' },
      { type: 'put', key: 'p/1', value: 'newer' },
    ]);
    expect(await overlay.entries('p/')).toEqual([
      ['p/1', 'newer'],
      ['p/2', 'new'],
    ]);
    expect(await overlay.entries('p/', { limit: 1 })).toEqual([['p/1', 'newer']]);
    await durable.close();
  });

  it('keeps a landed value as it was when it landed, and refuses a batch with a value it cannot store, whole', async () => {
    const durable = await openMemoryStore();
    const overlay = new LandedOverlay(() => durable);
    const value = { n: 1 };
    overlay.land([{ type: 'put', key: 'a', value }]);
    value.n = 2;
    expect(overlay.get('a')).toEqual({ n: 1 });
    expect(() =>
      overlay.land([
        { type: 'put', key: 'b', value: 1 },
        { type: 'put', key: 'c', value: undefined },
      ]),
    ).toThrow(/the value of 'c' cannot be null, undefined/);
    expect(overlay.get('b')).toBeUndefined();
    await durable.close();
  });
});
