import { describe, expect, it } from 'vitest';
import { ParkedKeys, type ParkedEvent, type ParkedKeyState } from '../../../../src/engine/parkedKeys.js';
import { changelogTopic } from '../../../../src/kafka/changelog/changelogWrite.js';
import { ChangelogFold } from '../../../../src/kafka/changelog/changelogFold.js';
import { parkedKeyOf, parkedKeysOf } from '../../../../src/kafka/parked/parkedChangelog.js';
import type { Store, StoreOp } from '../../../../src/ports/store.js';

const scope = { park: 'decide-park', topic: 'in/disputes' };
const topicEnc = encodeURIComponent(scope.topic);
const encoder = new TextEncoder();

/** A changelog record as the state's changelog writer produces it: key = state key, value = JSON, null = deleted. */
function record(partition: number, offset: number, key: string, value: unknown | null) {
  return { topic: changelogTopic('g', scope.park), partition, offset, key, value: value === null ? null : encoder.encode(JSON.stringify(value)) };
}

function parkedEvent(partition: number, offset: number, key: string, reason: 'POISON' | 'HELD'): ParkedEvent {
  return {
    event: {
      effectId: `${scope.topic}/${partition}/${offset}`,
      lane: key,
      key,
      topic: scope.topic,
      partition,
      offset,
      timestampMs: 1,
      headers: {},
      valueBase64: Buffer.from(`{"n":${offset}}`).toString('base64'),
    },
    reason,
    step: 'decide',
    attempts: reason === 'POISON' ? 3 : 0,
    errors: reason === 'POISON' ? [{ attempt: 3, atMs: 5, error: 'decision failed its schema' }] : [],
    parkedAtMs: 1_000 + offset,
  };
}

const held = (p: number, key: string, seq: number) => `held/${scope.park}/${topicEnc}/${p}/${encodeURIComponent(key)}/${String(seq).padStart(16, '0')}`;
const parked = (p: number, key: string) => `parked/${scope.park}/${topicEnc}/${p}/${encodeURIComponent(key)}`;

describe('the park changelog, folded', () => {
  it('names the topic <group>-<store>-changelog', () => {
    expect(changelogTopic('disputes', 'decide-park')).toBe('disputes-decide-park-changelog');
  });

  it('shows a parked key with its head and held events in order, from hand-made records', () => {
    const fold = new ChangelogFold();
    const state: ParkedKeyState = { lane: 'acct/2', key: 'acct/2', status: 'parked', headSeq: 0, nextSeq: 3, parkedAtMs: 1_012 };
    fold.apply([
      record(1, 0, held(1, 'acct/2', 0), parkedEvent(1, 12, 'acct/2', 'POISON')),
      record(1, 1, parked(1, 'acct/2'), { ...state, nextSeq: 1 }),
      record(1, 2, held(1, 'acct/2', 1), parkedEvent(1, 17, 'acct/2', 'HELD')),
      record(1, 3, parked(1, 'acct/2'), { ...state, nextSeq: 2 }),
      record(1, 4, held(1, 'acct/2', 2), parkedEvent(1, 22, 'acct/2', 'HELD')),
      record(1, 5, parked(1, 'acct/2'), state),
      // Other stores' keys in the same fold are not parked keys.
      record(1, 6, `heldid/${scope.park}/${topicEnc}/1/in/disputes/1/12`, { lane: 'acct/2', seq: 0 }),
    ]);
    const [view, ...rest] = parkedKeysOf(fold, scope);
    expect(rest).toEqual([]);
    expect(view).toMatchObject({ partition: 1, lane: 'acct/2', status: 'parked', missing: 0 });
    expect(view!.head?.event.offset).toBe(12);
    expect(view!.held.map((h) => h.event.offset)).toEqual([17, 22]);
    expect(parkedKeyOf(fold, scope, 1, 'acct/2')).toEqual(view);
    expect(parkedKeyOf(fold, scope, 0, 'acct/2')).toBeUndefined();
  });

  it('forgets a key after its tombstones, and keeps the latest value of each key', () => {
    const fold = new ChangelogFold();
    fold.apply([
      record(0, 0, held(0, 'a', 0), parkedEvent(0, 3, 'a', 'POISON')),
      record(0, 1, parked(0, 'a'), { lane: 'a', key: 'a', status: 'parked', headSeq: 0, nextSeq: 1, parkedAtMs: 1 }),
      record(0, 2, parked(0, 'a'), { lane: 'a', key: 'a', status: 'replaying', resolution: { discard: true }, headSeq: 0, nextSeq: 1, parkedAtMs: 1 }),
    ]);
    expect(parkedKeyOf(fold, scope, 0, 'a')?.status).toBe('replaying');
    fold.apply([record(0, 3, held(0, 'a', 0), null), record(0, 4, parked(0, 'a'), null)]);
    expect(parkedKeysOf(fold, scope)).toEqual([]);
    expect(fold.size).toBe(0);
  });

  it('lists the keys of every partition, by partition then key, and one partition alone', () => {
    const fold = new ChangelogFold();
    for (const [p, key, offset] of [
      [1, 'b', 4],
      [0, 'z', 2],
      [1, 'a', 9],
      [10, 'a', 1],
    ] as const) {
      fold.apply([
        record(p, offset, held(p, key, 0), parkedEvent(p, offset, key, 'POISON')),
        record(p, offset + 100, parked(p, key), { lane: key, key, status: 'parked', headSeq: 0, nextSeq: 1, parkedAtMs: 7 }),
      ]);
    }
    expect(parkedKeysOf(fold, scope).map((v) => `${v.partition}/${v.lane}`)).toEqual(['0/z', '1/a', '1/b', '10/a']);
    expect(parkedKeysOf(fold, scope, 1).map((v) => v.lane)).toEqual(['a', 'b']);
    // Another park's or topic's keys are not listed.
    expect(parkedKeysOf(fold, { ...scope, park: 'other-park' })).toEqual([]);
    expect(parkedKeysOf(fold, { ...scope, topic: 'in' })).toEqual([]);
  });

  it('counts the held events the changelog does not show yet as missing', () => {
    const fold = new ChangelogFold();
    fold.apply([record(0, 0, parked(0, 'k'), { lane: 'k', key: 'k', status: 'parked', headSeq: 0, nextSeq: 2, parkedAtMs: 1 })]);
    const view = parkedKeyOf(fold, scope, 0, 'k')!;
    expect(view.head).toBeUndefined();
    expect(view.missing).toBe(2);
  });

  it('folds the store ops of the engine’s own ParkedKeys into the same view the engine has', async () => {
    const rows = new Map<string, unknown>();
    const store: Store = {
      location: 'memory',
      get: <T>(key: string) => rows.get(key) as T | undefined,
      batch: async () => undefined,
      entries: async () => [],
      close: async () => undefined,
    };
    const keys = new ParkedKeys(store, scope.park, { topic: scope.topic, partition: 3 });
    const fold = new ChangelogFold();
    let offset = 0;
    // The changelog writer's contract: each put is the JSON of the value, each del a tombstone.
    const write = (ops: StoreOp[]) => {
      for (const op of ops) {
        if (op.type === 'put') rows.set(op.key, op.value);
        else rows.delete(op.key);
      }
      fold.apply(ops.map((op) => record(3, offset++, op.key, op.type === 'put' ? op.value : null)));
    };
    write(keys.park(parkedEvent(3, 40, 'k', 'POISON')));
    write(keys.hold(parkedEvent(3, 41, 'k', 'HELD')));
    write(keys.hold(parkedEvent(3, 45, 'k', 'HELD')));
    const view = parkedKeyOf(fold, scope, 3, 'k')!;
    expect(view).toMatchObject({ ...keys.get('k'), partition: 3, topic: scope.topic });
    expect(view.head).toEqual(keys.head('k'));
    expect(view.held.map((h) => h.event.offset)).toEqual([41, 45]);

    write(keys.resolve('k', { decision: { action: 'refund' } }));
    write(keys.advance('k', keys.head('k')));
    const advanced = parkedKeyOf(fold, scope, 3, 'k')!;
    expect(advanced.head?.event.offset).toBe(41);
    expect(advanced.held.map((h) => h.event.offset)).toEqual([45]);
    write(keys.advance('k', keys.head('k')));
    write(keys.advance('k', keys.head('k')));
    expect(parkedKeyOf(fold, scope, 3, 'k')).toBeUndefined();
    expect(parkedKeysOf(fold, scope)).toEqual([]);
  });

  it('refuses a record without a key and a value that is not JSON, naming where it stands', () => {
    const fold = new ChangelogFold();
    expect(() => fold.apply([{ topic: 't', partition: 0, offset: 5, key: null, value: null }])).toThrow(/t\/0@5 has no key/);
    expect(() => fold.apply([{ topic: 't', partition: 1, offset: 6, key: 'k', value: encoder.encode('{oops') }])).toThrow(
      /t\/1@6: its value is not UTF-8 JSON/,
    );
  });
});
