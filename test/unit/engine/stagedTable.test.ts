import { describe, expect, it } from 'vitest';
import { StagedTable } from '../../../src/engine/stagedTable.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { stateKeys } from '../../../src/state/stateKeys.js';

const tp = { topic: 'in', partition: 3 };

describe('StagedTable', () => {
  it('reads the store through, and its own staged writes first', async () => {
    const store = await openMemoryStore();
    await store.batch([
      { type: 'put', key: stateKeys.table('fx', tp, 'a'), value: 1 },
      { type: 'put', key: stateKeys.table('fx', tp, 'b'), value: 2 },
      { type: 'put', key: stateKeys.table('other', tp, 'a'), value: 'not mine' },
    ]);
    const table = new StagedTable(store, 'fx', tp);
    expect(table.get('a')).toBe(1);
    expect(table.get('c')).toBeUndefined();
    table.put('a', 10);
    table.del('b');
    table.put('c', { nested: true });
    expect(table.get('a')).toBe(10);
    expect(table.get('b')).toBeUndefined();
    expect(table.get('c')).toEqual({ nested: true });
    await store.close();
  });

  it('writes nothing until its ops are written, and then only the last write of each row', async () => {
    const store = await openMemoryStore();
    const table = new StagedTable(store, 'fx', tp);
    table.put('a', 1);
    table.put('a', 2);
    table.put('b', 3);
    table.del('b');
    expect(store.get(stateKeys.table('fx', tp, 'a'))).toBeUndefined();
    expect(table.ops()).toEqual([
      { type: 'put', key: 'table/fx/in/3/a', value: 2 },
      { type: 'del', key: 'table/fx/in/3/b' },
    ]);
    await store.batch(table.ops());
    expect(store.get('table/fx/in/3/a')).toBe(2);
    expect(await store.entries('table/')).toEqual([['table/fx/in/3/a', 2]]);
    await store.close();
  });

  it('refuses to put undefined or null, pointing at del', async () => {
    const store = await openMemoryStore();
    const table = new StagedTable(store, 'fx', tp);
    expect(() => table.put('row', undefined)).toThrow("state table 'fx': put('row', undefined); a row holds a JSON value: use del('row') to remove a row");
    expect(() => table.put('row', null)).toThrow("state table 'fx': put('row', null); a row holds a JSON value: use del('row') to remove a row");
    expect(table.ops()).toEqual([]);
    await store.close();
  });
});
