import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLevelStore } from '../../../src/state/levelStore.js';
import { stateKeys } from '../../../src/state/stateKeys.js';
import { BASE_FORMAT_VERSION, decodeLocalValue, encodeLocalValue, StoredFormatError, STORED_FORMAT_VERSION } from '../../../src/state/storedFormat.js';

const tp = { topic: 'disputes', partition: 1 };
const effectKey = stateKeys.effect('fx', tp, 'disputes/1/7');

describe('stored format of local values', () => {
  it('writes version 2 before the JSON (local values have kept its shape since), and reads it back', () => {
    expect(STORED_FORMAT_VERSION).toBe(4);
    expect(BASE_FORMAT_VERSION).toBe(2);
    expect(encodeLocalValue({ a: 1 })).toBe('v2:{"a":1}');
    expect(decodeLocalValue(effectKey, 'v2:{"a":1}')).toEqual({ a: 1 });
  });

  it('reads text without a version as version 1, the JSON of the code before versions', () => {
    for (const value of [{ outputs: [] }, 10_000, 'v', [1], null, true]) expect(decodeLocalValue(effectKey, JSON.stringify(value))).toEqual(value);
    expect(decodeLocalValue(effectKey, 'v1:{"a":1}')).toEqual({ a: 1 });
  });

  it('refuses a newer version, naming the store, the key, the version and the fix', () => {
    const read = () => decodeLocalValue(effectKey, 'v5:{"a":1}');
    expect(read).toThrow(StoredFormatError);
    expect(read).toThrow(
      "store 'fx': the local value of 'effect/fx/disputes/1/disputes/1/7' is in stored format 5, and this orderly reads formats 1 to 4; " +
        'it was written by a newer orderly: upgrade orderly on this worker (every worker of the group must run a version that reads it)',
    );
    expect(() => decodeLocalValue('checkpoint/disputes/1', 'v9:{}')).toThrow("store 'checkpoint'");
    expect(() => decodeLocalValue(effectKey, 'vx:{}')).toThrow("has no format version ('v<number>:')");
  });
});

describe('a LevelDB directory written before versions', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'orderly-format-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads its values as version 1, writes new ones as version 2, and refuses a newer one when read', async () => {
    // The code before this change opened LevelDB with the 'json' value encoding: plain JSON.
    const old = new Level<string, unknown>(dir, { valueEncoding: 'json' });
    await old.batch([
      { type: 'put', key: effectKey, value: { outputs: [], appliedAtMs: 5 } },
      { type: 'put', key: stateKeys.table('fx', tp, 'row'), value: 3 },
      { type: 'put', key: stateKeys.table('fx', tp, 'newer'), value: 'x' },
    ]);
    await old.close();
    const raw = new Level<string, string>(dir, { valueEncoding: 'utf8' });
    await raw.put(stateKeys.table('fx', tp, 'newer'), 'v5:"x"');
    await raw.close();

    const store = await openLevelStore(dir);
    try {
      expect(store.get(effectKey)).toEqual({ outputs: [], appliedAtMs: 5 });
      expect(store.get(stateKeys.table('fx', tp, 'row'))).toBe(3);
      expect(() => store.get(stateKeys.table('fx', tp, 'newer'))).toThrow(StoredFormatError);
      await expect(store.entries(stateKeys.table('fx', tp, ''))).rejects.toThrow('is in stored format 5');
      await store.batch([{ type: 'put', key: stateKeys.table('fx', tp, 'row'), value: 4 }]);
      expect(store.get(stateKeys.table('fx', tp, 'row'))).toBe(4);
    } finally {
      await store.close();
    }
    const after = new Level<string, string>(dir, { valueEncoding: 'utf8' });
    expect(await after.get(stateKeys.table('fx', tp, 'row'))).toBe('v2:4');
    await after.close();
  });
});
