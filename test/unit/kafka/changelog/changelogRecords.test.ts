import { describe, expect, it } from 'vitest';
import { ChangelogNameError, checkedChangelogTopic, fromChangelogRecord, RestoreWrites } from '../../../../src/kafka/changelog/changelogRecords.js';
import { changelogRecordOf, encodeWrite, toChangelogRecord } from '../../../../src/kafka/changelog/changelogWrite.js';
import type { StoreOp } from '../../../../src/ports/store.js';
import { openMemoryStore } from '../../../../src/state/levelStore.js';
import { stateKeys } from '../../../../src/state/stateKeys.js';
import { StoredFormatError } from '../../../../src/state/storedFormat.js';

const tp = { topic: 'disputes', partition: 2 };
const text = (bytes: Uint8Array | null) => (bytes === null ? null : new TextDecoder().decode(bytes));

describe('changelog records', () => {
  it("go to the store's changelog topic, on the key's source partition, keyed by the state key, valued by the JSON", () => {
    const key = stateKeys.parkedKey('hold', tp, 'acct-1');
    const value = { lane: 'acct-1', key: 'acct-1', status: 'parked', headSeq: 0, nextSeq: 1, parkedAtMs: 5 };
    const record = toChangelogRecord('grp', { type: 'put', key, value });
    expect(record).toMatchObject({ topic: 'grp-hold-changelog', partition: 2, key: 'parked/hold/disputes/2/acct-1' });
    expect(text(record.value)).toBe(`v4:${JSON.stringify(value)}`);
    expect(text(toChangelogRecord('grp', { type: 'put', key, value }, 2).value)).toBe(JSON.stringify(value));
  });

  it('write a delete as a tombstone (null value), which compaction then drops', () => {
    const key = stateKeys.attempts('decide', tp, 9);
    expect(toChangelogRecord('grp', { type: 'del', key })).toEqual({ topic: 'grp-decide-attempts-changelog', partition: 2, key, value: null });
    expect(toChangelogRecord('grp', { type: 'del', key }, 2)).toEqual({
      topic: 'grp-decide-attempts-changelog',
      partition: 2,
      key,
      value: null,
      headers: { 'orderly-format': '2' },
    });
  });

  it('read back as the same store op', () => {
    const ops = [
      { type: 'put', key: stateKeys.effect('fx', tp, 'disputes/2/4'), value: { outputs: [], appliedAtMs: 1, text: 'é ✓' } },
      { type: 'put', key: stateKeys.table('fx', tp, 'r'), value: 0 },
      { type: 'del', key: stateKeys.heldIndex('hold', tp, 'disputes/2/4') },
    ] as const;
    for (const op of ops) expect(fromChangelogRecord(toChangelogRecord('g', op))).toEqual(op);
  });

  it('encode a put once: LevelDB gets the JSON after its format version as text, the changelog the same JSON as bytes with the version in a header', () => {
    const key = stateKeys.effect('fx', tp, 'disputes/2/4');
    const value = { outputs: [], appliedAtMs: 1, text: 'é ✓' };
    const write = encodeWrite('grp', { type: 'put', key, value });
    expect(write.local).toEqual({ type: 'put', key, value: `v2:${JSON.stringify(value)}`, valueEncoding: 'utf8' });
    const record = changelogRecordOf(write, 2);
    expect(record).toMatchObject({ topic: 'grp-fx-changelog', partition: 2, key, headers: { 'orderly-format': '2' } });
    expect(text(record.value)).toBe(JSON.stringify(value));
    const del = { type: 'del', key } as const;
    const deleted = encodeWrite('grp', del);
    expect(deleted.local).toBe(del);
    expect(changelogRecordOf(deleted, 2)).toEqual({ topic: 'grp-fx-changelog', partition: 2, key, value: null, headers: { 'orderly-format': '2' } });
    // Another group, the same store: its own topic.
    expect(encodeWrite('other', del).topic).toBe('other-fx-changelog');
  });

  it('encode a put at format 4 with no header: the version before the JSON in the value; read it back every way a changelog is read', async () => {
    const key = stateKeys.effect('fx', tp, 'disputes/2/4');
    const value = { outputs: [], appliedAtMs: 1, text: 'é ✓' };
    const write = encodeWrite('grp', { type: 'put', key, value });
    const { local } = write;
    const record = changelogRecordOf(write, 4);
    expect(local).toEqual({ type: 'put', key, value: `v2:${JSON.stringify(value)}`, valueEncoding: 'utf8' });
    expect(record.headers).toBeUndefined();
    expect(text(record.value)).toBe(`v4:${JSON.stringify(value)}`);
    expect(fromChangelogRecord(record)).toEqual({ type: 'put', key, value });
    const del = changelogRecordOf(encodeWrite('grp', { type: 'del', key }), 4);
    expect(del).toEqual({ topic: 'grp-fx-changelog', partition: 2, key, value: null });
    const gathered = new RestoreWrites();
    gathered.add([record]);
    const local2 = await openMemoryStore();
    await local2.batch(gathered.take() as StoreOp[]);
    expect(local2.get(key)).toEqual(value);
    gathered.add([del]);
    expect(gathered.take()).toEqual([{ type: 'del', key }]);
    // A newer version in the value is refused as one in a header is.
    const newer = { key, value: new TextEncoder().encode('v5:{}') };
    expect(() => fromChangelogRecord(newer)).toThrow(StoredFormatError);
    expect(() => new RestoreWrites().add([newer])).toThrow(StoredFormatError);
    for (const odd of ['vx{}', 'v 4:{}', 'v0x4:{}', 'v0:{}'])
      expect(() => fromChangelogRecord({ key, value: new TextEncoder().encode(odd) }), odd).toThrow("has no format version ('v<number>:')");
  });

  it('read a record without the format header as format 1, and refuse a newer format naming the store, the version and the fix', () => {
    const key = stateKeys.effect('fx', tp, 'disputes/2/4');
    const value = new TextEncoder().encode('{"outputs":[],"appliedAtMs":1}');
    expect(fromChangelogRecord({ key, value })).toEqual({ type: 'put', key, value: { outputs: [], appliedAtMs: 1 } });
    expect(fromChangelogRecord({ key, value, headers: { 'orderly-format': '1' } })).toEqual({ type: 'put', key, value: { outputs: [], appliedAtMs: 1 } });
    const newer = () => fromChangelogRecord({ key, value, headers: { 'orderly-format': '5' } });
    expect(newer).toThrow(StoredFormatError);
    expect(newer).toThrow(
      /^store 'fx': the changelog record 'effect\/fx\/disputes\/2\/disputes\/2\/4' is in stored format 5, and this orderly reads formats 1 to 4; .*upgrade orderly/,
    );
    expect(() => fromChangelogRecord({ key, value: null, headers: { 'orderly-format': '5' } })).toThrow(StoredFormatError);
    expect(() => fromChangelogRecord({ key, value, headers: { 'orderly-format': 'two' } })).toThrow("its header orderly-format is 'two', not a format version");
  });

  it("restore a polled batch as the last write of each key, each value kept as the record's bytes behind the stored prefix", async () => {
    const horizon = stateKeys.horizon('fx', tp);
    const effect = stateKeys.effect('fx', tp, 'disputes/2/7');
    const batch = [
      toChangelogRecord('g', { type: 'put', key: horizon, value: { upTo: 5 } }),
      toChangelogRecord('g', { type: 'put', key: effect, value: { outputs: [], appliedAtMs: 1, text: 'é ✓' } }),
      toChangelogRecord('g', { type: 'put', key: horizon, value: { upTo: 6 } }),
      toChangelogRecord('g', { type: 'del', key: stateKeys.attempts('decide', tp, 9) }),
    ];
    const gathered = new RestoreWrites();
    gathered.add(batch);
    const writes = gathered.take();
    expect(writes).toEqual([
      { type: 'put', key: horizon, value: 'v2:{"upTo":6}', valueEncoding: 'utf8' },
      { type: 'put', key: effect, value: 'v2:{"outputs":[],"appliedAtMs":1,"text":"é ✓"}', valueEncoding: 'utf8' },
      { type: 'del', key: stateKeys.attempts('decide', tp, 9) },
    ]);
    // Stored so, they read back as the values written.
    const local = await openMemoryStore();
    await local.batch(writes as never);
    expect(local.get(horizon)).toEqual({ upTo: 6 });
    expect(local.get(effect)).toEqual({ outputs: [], appliedAtMs: 1, text: 'é ✓' });
    expect(() => gathered.add([{ key: horizon, value: null, headers: { 'orderly-format': '5' } }])).toThrow(StoredFormatError);
  });

  it('restore a value as the text of its JSON: what orderly wrote (a lone surrogate escaped by JSON.stringify) reads back the same; bytes that are not UTF-8 become U+FFFD', async () => {
    const key = (id: string) => stateKeys.table('fx', tp, id);
    const value = { s: 'é ✓ \ud800 \u{1F600}' };
    const gathered = new RestoreWrites();
    gathered.add([toChangelogRecord('g', { type: 'put', key: key('a'), value }), { key: key('b'), value: Uint8Array.of(0x22, 0xff, 0x22) }]);
    const writes = gathered.take();
    expect(writes).toEqual([
      { type: 'put', key: key('a'), value: `v2:${JSON.stringify(value)}`, valueEncoding: 'utf8' },
      { type: 'put', key: key('b'), value: 'v2:"\ufffd"', valueEncoding: 'utf8' },
    ]);
    const local = await openMemoryStore();
    await local.batch(writes as never);
    expect(local.get(key('a'))).toEqual(value);
    expect(local.get(key('b'))).toBe('\ufffd');
  });

  it('restore records gathered over several polls as one write per key: a put then its delete is one delete, a record of format 1 is stored in the current format', async () => {
    const effect = (id: string) => stateKeys.effect('fx', tp, `disputes/2/${id}`);
    const gathered = new RestoreWrites();
    gathered.add([
      toChangelogRecord('g', { type: 'put', key: effect('1'), value: { n: 1 } }),
      toChangelogRecord('g', { type: 'put', key: effect('2'), value: { n: 2 } }),
    ]);
    gathered.add([toChangelogRecord('g', { type: 'del', key: effect('1') }), { key: effect('3'), value: new TextEncoder().encode('{"n":3}') }]);
    expect(gathered.size).toBe(3);
    expect(gathered.addedBytes).toBeGreaterThan(0);
    const writes = gathered.take();
    expect(writes).toEqual([
      { type: 'del', key: effect('1') },
      { type: 'put', key: effect('2'), value: 'v2:{"n":2}', valueEncoding: 'utf8' },
      { type: 'put', key: effect('3'), value: 'v2:{"n":3}', valueEncoding: 'utf8' },
    ]);
    expect([gathered.size, gathered.addedBytes, gathered.take()]).toEqual([0, 0, []]);
    expect(() => gathered.add([{ key: null, value: null }])).toThrow('a changelog record has no key');
  });

  it('restore after a wipe without the deletes of keys the restore never wrote (under the wiped prefixes, while it remembers few enough keys)', () => {
    const effect = (id: string) => stateKeys.effect('fx', tp, `disputes/2/${id}`);
    const other = stateKeys.effect('fx', { topic: 'disputes', partition: 3 }, 'disputes/3/1');
    const put = (key: string) => toChangelogRecord('g', { type: 'put', key, value: 1 });
    const del = (key: string) => toChangelogRecord('g', { type: 'del', key });
    const gathered = new RestoreWrites({ prefixes: [stateKeys.effectPartitionPrefix('fx', tp)], maxKeys: 3 });
    gathered.add([put(effect('1')), del(effect('2')), put(effect('3')), del(effect('3')), del(other)]);
    const kinds = (writes: ReturnType<RestoreWrites['take']>) => writes.map((w) => `${w.type} ${w.key}`);
    // 2 and 3 were never written locally; `other` lies outside the wiped prefixes.
    expect(kinds(gathered.take())).toEqual([`put ${effect('1')}`, `del ${other}`]);
    gathered.add([del(effect('1')), del(effect('2'))]);
    expect(kinds(gathered.take())).toEqual([`del ${effect('1')}`]);
    // Past maxKeys remembered, every delete is written.
    gathered.add([put(effect('4')), put(effect('5')), put(effect('6')), put(effect('7'))]);
    gathered.take();
    gathered.add([del(effect('8'))]);
    expect(kinds(gathered.take())).toEqual([`del ${effect('8')}`]);
  });

  it('refuses a record without a key', () => {
    expect(() => fromChangelogRecord({ key: null, value: null })).toThrow('a changelog record has no key');
  });

  it('name a store whose changelog topic Kafka would refuse, and the fix', () => {
    expect(checkedChangelogTopic('grp', 'fx')).toBe('grp-fx-changelog');
    expect(() => checkedChangelogTopic('grp', 'my effect')).toThrow(ChangelogNameError);
    expect(() => checkedChangelogTopic('grp', 'my effect')).toThrow(
      "store 'my effect': its changelog topic 'grp-my effect-changelog' holds characters Kafka does not allow in a topic name (only a-z, A-Z, 0-9, ., _ and -); " +
        "rename the operator 'my effect' (its name names the store), e.g. with { name: 'my-effect' }",
    );
    expect(() => checkedChangelogTopic('grp', 'decide/v2-attempts')).toThrow("rename the operator 'decide/v2'");
    expect(() => checkedChangelogTopic('my group', 'fx')).toThrow('; use a consumer group name of those characters only');
    expect(() => checkedChangelogTopic('g'.repeat(240), 'fx')).toThrow(
      "is 253 characters long (Kafka allows 249); give the operator 'fx' a shorter name, or use a shorter consumer group name",
    );
  });
});
