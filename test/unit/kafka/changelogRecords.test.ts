import { describe, expect, it } from 'vitest';
import { ChangelogNameError, checkedChangelogTopic, encodeWrite, fromChangelogRecord, toChangelogRecord } from '../../../src/kafka/changelog/changelogRecords.js';
import { stateKeys } from '../../../src/state/stateKeys.js';

const tp = { topic: 'disputes', partition: 2 };
const text = (bytes: Uint8Array | null) => (bytes === null ? null : new TextDecoder().decode(bytes));

describe('changelog records', () => {
  it("go to the store's changelog topic, on the key's source partition, keyed by the state key, valued by the JSON", () => {
    const key = stateKeys.parkedKey('hold', tp, 'acct-1');
    const value = { lane: 'acct-1', key: 'acct-1', status: 'parked', headSeq: 0, nextSeq: 1, parkedAtMs: 5 };
    const record = toChangelogRecord('grp', { type: 'put', key, value });
    expect(record).toMatchObject({ topic: 'grp-hold-changelog', partition: 2, key: 'parked/hold/disputes/2/acct-1' });
    expect(text(record.value)).toBe(JSON.stringify(value));
  });

  it('write a delete as a tombstone (null value), which compaction then drops', () => {
    const key = stateKeys.attempts('decide', tp, 9);
    const record = toChangelogRecord('grp', { type: 'del', key });
    expect(record).toEqual({ topic: 'grp-decide-attempts-changelog', partition: 2, key, value: null });
  });

  it('read back as the same store op', () => {
    const ops = [
      { type: 'put', key: stateKeys.effect('fx', tp, 'disputes/2/4'), value: { outputs: [], appliedAtMs: 1, text: 'é ✓' } },
      { type: 'put', key: stateKeys.table('fx', tp, 'r'), value: 0 },
      { type: 'del', key: stateKeys.heldIndex('hold', tp, 'disputes/2/4') },
    ] as const;
    for (const op of ops) expect(fromChangelogRecord(toChangelogRecord('g', op))).toEqual(op);
  });

  it('encode a put once: LevelDB gets the JSON text as it is, the changelog the same bytes', () => {
    const key = stateKeys.effect('fx', tp, 'disputes/2/4');
    const value = { outputs: [], appliedAtMs: 1, text: 'é ✓' };
    const { local, record } = encodeWrite('grp', { type: 'put', key, value });
    expect(local).toEqual({ type: 'put', key, value: JSON.stringify(value), valueEncoding: 'utf8' });
    expect(record).toMatchObject({ topic: 'grp-fx-changelog', partition: 2, key });
    expect(text(record.value)).toBe(JSON.stringify(value));
    const del = { type: 'del', key } as const;
    expect(encodeWrite('grp', del)).toEqual({ local: del, record: { topic: 'grp-fx-changelog', partition: 2, key, value: null } });
    // Another group, the same store: its own topic.
    expect(encodeWrite('other', del).record.topic).toBe('other-fx-changelog');
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
    expect(() => checkedChangelogTopic('g'.repeat(240), 'fx')).toThrow("is 253 characters long (Kafka allows 249); give the operator 'fx' a shorter name, or use a shorter consumer group name");
  });
});
