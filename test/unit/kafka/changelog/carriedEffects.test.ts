import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { StateStore } from '../../../../src/graph/stores.js';
import { CARRIED_EFFECTS_HEADER, decodeCarried, MAX_CARRIED_BYTES, MAX_CARRIED_PER_ROW } from '../../../../src/kafka/changelog/carriedEffects.js';
import { ChangelogFold } from '../../../../src/kafka/changelog/changelogFold.js';
import { changelogRecordWrites } from '../../../../src/kafka/changelog/changelogRecords.js';
import { ChangelogStore } from '../../../../src/kafka/changelog/changelogStore.js';
import type { StoreOp } from '../../../../src/ports/store.js';
import { openMemoryStore, type LocalStore } from '../../../../src/state/levelStore.js';
import { stateKeys } from '../../../../src/state/stateKeys.js';
import { checkpoints } from '../../../../src/kafka/changelog/checkpoints.js';
import { MemoryChangelog } from './memoryChangelog.js';

// Stored format 4: a table row's changelog record carries the effect records of its events. The
// property below runs a partition's writes as the engine makes them (an event writes its row, then
// its effect record at its ring position if the record there is below the committed offset),
// with commits, the log cleaner's compaction, crashes (a full restore on an empty store) and clean
// hand-backs (to the same disk or to another one, which restores from its own checkpoint what was
// written since) in any order, each restore maybe after one on the same disk that a stop abandoned
// (which puts its checkpoint back), and checks after every restore that each
// ring position holds the last record written to it whenever a redelivery may still need it.

const stores: StateStore[] = [{ name: 'fx', kind: 'effects' }];
const tp = { topic: 'in', partition: 0 };
const changelogTp = { topic: 'g-fx-changelog', partition: 0 };
const row = (r: number) => stateKeys.table('fx', tp, `row-${r}`);
const ring = (position: number) => stateKeys.ring('fx', tp, position);
const effectRecord = (offset: number) => ({ topic: 'in', partition: 0, offset, key: 'k', effectId: `in/0/${offset}`, appliedAtMs: 1, outputs: [] });

async function open(changelog: MemoryChangelog, options: { local?: LocalStore; committed?: number; carry?: boolean } = {}) {
  const local = options.local ?? (await openMemoryStore());
  const store = new ChangelogStore({
    local,
    group: 'g',
    stores,
    produce: changelog.produce,
    source: changelog,
    logger: pino({ level: 'silent' }),
    storedFormat: options.carry === false ? 2 : 4,
  });
  await store.openPartition(tp, options.committed);
  return { store, local };
}

/**
 * A take-over of the partition on `local` that a stop abandons as its restore's `at`th poll comes
 * (one record per poll, each written locally): as the engine does, one that ends first is handed back.
 */
async function abandonedRestore(changelog: MemoryChangelog, local: LocalStore, at: number, committed: number | undefined): Promise<void> {
  const stop = new AbortController();
  let polls = 0;
  const store = new ChangelogStore({
    local,
    group: 'g',
    stores,
    produce: changelog.produce,
    source: {
      ends: (t) => changelog.ends(t),
      read: (ranges, apply) =>
        changelog.read(ranges, async (messages) => {
          if (++polls === at) stop.abort(new Error('the engine stops'));
          await apply(messages);
        }),
      close: async () => undefined,
    },
    logger: pino({ level: 'silent' }),
    restoreBatchBytes: 1,
  });
  const pollSize = changelog.pollSize;
  changelog.pollSize = 1;
  try {
    await store.openPartition(tp, committed, stop.signal);
    await store.closePartition(tp);
  } catch (error) {
    if ((error as Error).cause !== stop.signal.reason) throw error;
  } finally {
    changelog.pollSize = pollSize;
  }
}

/** A record's format as written: `2` (its header), `4` (`v4:` before its value), `4+n` (carrying n effect records), `tombstone` (format 4's: no header). */
function shape(r: { readonly value: Uint8Array | null; readonly headers?: Readonly<Record<string, string>> | undefined }): string {
  const header = r.headers?.['orderly-format'];
  if (header !== undefined) return header;
  if (r.value === null) return 'tombstone';
  const text = Buffer.from(r.value).toString();
  expect(text.startsWith('v4:'), text).toBe(true);
  const lines = text.split('\n').length - 1;
  return lines > 0 ? `4+${lines}` : '4';
}

/** The offsets of the effect records a record carries. */
const carriedBy = (r: Parameters<typeof changelogRecordWrites>[0]) =>
  changelogRecordWrites(r)
    .slice(1)
    .map((op) => (op as { value: { offset: number } }).value.offset);

describe('effect records carried by their rows (stored format 4)', () => {
  it("write one changelog record for an event's row and its effect record; a full restore writes both", async () => {
    const changelog = new MemoryChangelog();
    const { store } = await open(changelog);
    await store.batch([
      { type: 'put', key: row(1), value: { count: 1 } },
      { type: 'put', key: ring(7), value: effectRecord(7) },
    ]);
    const records = changelog.partition(changelogTp);
    expect(records.map((r) => r.key)).toEqual([row(1)]);
    expect(records[0]!.headers, 'no headers at format 4').toBeUndefined();
    expect(Buffer.from(records[0]!.value!).toString()).toBe(`v4:{"count":1}\n7 7 ${JSON.stringify(effectRecord(7))}`);
    const other = await open(changelog, { committed: 7 });
    expect(other.store.get(row(1))).toEqual({ count: 1 });
    expect(other.store.get(ring(7))).toEqual(effectRecord(7));
    // Other readers see both writes too.
    expect(changelogRecordWrites(records[0]!)).toEqual([
      { type: 'put', key: row(1), value: { count: 1 } },
      { type: 'put', key: ring(7), value: effectRecord(7) },
    ]);
    const fold = new ChangelogFold();
    expect(fold.apply(records.map((r, offset) => ({ ...r, offset, partition: 0 })))).toEqual([row(1), ring(7)]);
    expect(fold.get(ring(7))).toEqual(effectRecord(7));
  });

  it('leave out at restore the carried records of events below the committed offset: no redelivery reads them', async () => {
    const changelog = new MemoryChangelog();
    const { store } = await open(changelog);
    await store.batch([
      { type: 'put', key: row(1), value: 1 },
      { type: 'put', key: ring(3), value: effectRecord(3) },
    ]);
    const restored = await open(changelog, { committed: 4 });
    expect(restored.store.get(row(1))).toBe(1);
    expect(restored.store.get(ring(3))).toBeUndefined();
  });

  it(`carry at most ${MAX_CARRIED_PER_ROW} records in a row's record: a row that fills up writes them as records of their own, and its events' records too until a commit passes it`, async () => {
    const changelog = new MemoryChangelog();
    const { store } = await open(changelog);
    for (let offset = 0; offset < MAX_CARRIED_PER_ROW + 2; offset++) {
      await store.batch([
        { type: 'put', key: row(1), value: offset },
        { type: 'put', key: ring(offset), value: effectRecord(offset) },
      ]);
    }
    const records = changelog.partition(changelogTp);
    expect(
      records.map((r) => (r.key === row(1) ? ['row', carriedBy(r)] : ['own', (changelogRecordWrites(r)[0] as { value: { offset: number } }).value.offset])),
    ).toEqual([
      ['row', [0]],
      ['row', [0, 1]],
      ['row', [0, 1, 2]],
      ['row', [0, 1, 2, 3]],
      // Event 4 fills the row: the four go as records of their own, then the row carries nothing.
      ['own', 0],
      ['own', 1],
      ['own', 2],
      ['own', 3],
      ['row', []],
      ['own', 4],
      ['row', []],
      ['own', 5],
    ]);
    // Once committed past the event that filled it, the row carries its next event's record again.
    store.committed(tp, 6);
    await store.batch([
      { type: 'put', key: row(1), value: 6 },
      { type: 'put', key: ring(6), value: effectRecord(6) },
    ]);
    expect(carriedBy(changelog.partition(changelogTp).at(-1)!)).toEqual([6]);
  });

  it(`carry at most ${MAX_CARRIED_BYTES} bytes of effect records in a row's record: a larger record is a record of its own`, async () => {
    const changelog = new MemoryChangelog();
    const { store } = await open(changelog);
    const large = { ...effectRecord(0), outputs: [{ topic: 'out', key: 'k', valueBase64: 'x'.repeat(MAX_CARRIED_BYTES), headers: {} }] };
    await store.batch([
      { type: 'put', key: row(1), value: 0 },
      { type: 'put', key: ring(0), value: large },
    ]);
    expect(changelog.partition(changelogTp).map((r) => [r.key, shape(r)])).toEqual([
      [row(1), '4'],
      [ring(0), '4'],
    ]);
  });

  it('at format 2, write what a restore found carried as records of their own before the row is written again (a rolling upgrade)', async () => {
    const changelog = new MemoryChangelog();
    const { store: newer } = await open(changelog);
    await newer.batch([
      { type: 'put', key: row(1), value: 5 },
      { type: 'put', key: ring(5), value: effectRecord(5) },
    ]);
    // A worker at format 2 takes over (event 5 not committed), writes the row again, and crashes; the cleaner runs.
    const { store: older } = await open(changelog, { committed: 5, carry: false });
    expect(older.get(ring(5))).toEqual(effectRecord(5));
    const written = changelog.partition(changelogTp).length;
    await older.batch([
      { type: 'put', key: row(1), value: 6 },
      { type: 'put', key: ring(6), value: effectRecord(6) },
    ]);
    changelog.compact(changelogTp, changelog.partition(changelogTp).length, true);
    const { store: next } = await open(changelog, { committed: 5 });
    expect(next.get(ring(5)), 'event 5 is found applied').toEqual(effectRecord(5));
    expect(next.get(ring(6))).toEqual(effectRecord(6));
    expect(
      changelog
        .partition(changelogTp)
        .slice(written)
        .map((r) => [r.key, shape(r)]),
      'format 2 only: ring 5 as a record of its own, then the row, then ring 6',
    ).toEqual([
      [ring(5), '2'],
      [row(1), '2'],
      [ring(6), '2'],
    ]);
  });

  it("write a deleted row's carried records as records of their own before its tombstone, which carries nothing", async () => {
    const changelog = new MemoryChangelog();
    const { store } = await open(changelog);
    await store.batch([
      { type: 'put', key: row(1), value: 1 },
      { type: 'put', key: ring(0), value: effectRecord(0) },
    ]);
    await store.batch([{ type: 'del', key: row(1) }]);
    const records = changelog.partition(changelogTp);
    expect(records.map((r) => [r.key, shape(r)])).toEqual([
      [row(1), '4+1'],
      [ring(0), '4'],
      [row(1), 'tombstone'],
    ]);
  });

  it('write format 2 only unless told to carry (the default: a rolling upgrade from an orderly that reads up to 2 stays possible)', async () => {
    const changelog = new MemoryChangelog();
    const { store } = await open(changelog, { carry: false });
    await store.batch([
      { type: 'put', key: row(1), value: 1 },
      { type: 'put', key: ring(0), value: effectRecord(0) },
    ]);
    expect(changelog.partition(changelogTp).map((r) => [r.key, shape(r)])).toEqual([
      [row(1), '2'],
      [ring(0), '2'],
    ]);
  });

  it('restore the records of format 3 (carried in a header), which this orderly reads but no longer writes', async () => {
    const changelog = new MemoryChangelog();
    await changelog.produce([
      {
        ...changelogTp,
        key: row(1),
        value: Buffer.from('{"count":1}'),
        headers: { 'orderly-format': '3', [CARRIED_EFFECTS_HEADER]: `7 7 ${JSON.stringify(effectRecord(7))}` },
      },
    ]);
    const { store } = await open(changelog, { committed: 7 });
    expect(store.get(row(1))).toEqual({ count: 1 });
    expect(store.get(ring(7))).toEqual(effectRecord(7));
    // The row's next record carries it again, now at format 4.
    await store.batch([{ type: 'put', key: row(1), value: { count: 2 } }]);
    expect(carriedBy(changelog.partition(changelogTp).at(-1)!)).toEqual([7]);
  });

  it('refuse carried records that orderly did not write, naming the row', async () => {
    expect(() => decodeCarried(row(1), 'not a list')).toThrow(
      `changelog record '${row(1)}': the effect records it carries are not '<position> <offset> <json>' lines`,
    );
    const changelog = new MemoryChangelog();
    await changelog.produce([{ ...changelogTp, key: row(1), value: Buffer.from('v4:1\nnot a list') }]);
    await expect(open(changelog)).rejects.toThrow(`changelog record '${row(1)}': the effect records it carries are not`);
  });

  it('keep every effect record a redelivery may need through commits, compaction, crashes and clean hand-backs', async () => {
    const RING_SIZE = 5;
    const ROWS = 3;
    const event = fc.record({ row: fc.integer({ min: -1, max: ROWS - 1 }), del: fc.boolean() });
    const step = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('events' as const), events: fc.array(event, { minLength: 1, maxLength: 4 }) }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('commit' as const), by: fc.nat({ max: 6 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('compact' as const), tombstones: fc.boolean() }) },
      // Before the restore that follows a crash or a hand-back, maybe one on the same disk that a stop abandoned.
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant('crash' as const), carry: fc.boolean(), abandonedAt: fc.option(fc.integer({ min: 1, max: 12 })) }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          kind: fc.constant('handBack' as const),
          newInstance: fc.boolean(),
          // To the other disk: it restores from its own checkpoint, if it has one, what was written since.
          toOther: fc.boolean(),
          abandonedAt: fc.option(fc.integer({ min: 1, max: 6 })),
        }),
      },
    );
    await fc.assert(
      // Told of commits, the store stops carrying committed records; not told (a store that only
      // sees writes), a record stops being carried once its ring position is written again.
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 50 }), fc.boolean(), async (steps, toldOfCommits) => {
        const changelog = new MemoryChangelog();
        let { store, local } = await open(changelog);
        /** The other disk, which the partition was handed back from (or never owned it). */
        let other = await openMemoryStore();
        /** Tombstones were cleaned since the other disk's checkpoint: it would be past its age, and not used. */
        let otherStale = false;
        let next = 0;
        let committed: number | undefined;
        /** The offset whose record was written last at each ring position. */
        const lastAt = new Map<number, number>();
        const rows = new Map<number, number>();
        const check = (when: string) => {
          for (const [position, offset] of lastAt) {
            if (offset < (committed ?? 0)) continue;
            expect(store.get<{ offset: number }>(ring(position))?.offset, `${when}: ring position ${position} (event ${offset}, committed ${committed})`).toBe(
              offset,
            );
          }
          for (let r = 0; r < ROWS; r++) expect(store.get(row(r)), `${when}: row ${r}`).toEqual(rows.get(r));
        };
        for (const s of steps) {
          if (s.kind === 'events') {
            const ops: StoreOp[] = [];
            for (const e of s.events) {
              const offset = next++;
              if (e.row >= 0 && e.del) {
                ops.push({ type: 'del', key: row(e.row) });
                rows.delete(e.row);
              } else if (e.row >= 0) {
                ops.push({ type: 'put', key: row(e.row), value: offset });
                rows.set(e.row, offset);
              }
              // The engine's claim: the position is free once its record is below the committed offset.
              const position = offset % RING_SIZE;
              const holder = lastAt.get(position);
              if (holder !== undefined && (committed === undefined || holder >= committed)) continue;
              ops.push({ type: 'put', key: ring(position), value: effectRecord(offset) });
              lastAt.set(position, offset);
            }
            await store.batch(ops);
          } else if (s.kind === 'commit') {
            committed = Math.min(next, (committed ?? 0) + s.by);
            if (toldOfCommits) store.committed(tp, committed);
          } else if (s.kind === 'compact') {
            changelog.compact(changelogTp, changelog.partition(changelogTp).length, s.tombstones);
            if (s.tombstones) otherStale = true;
          } else if (s.kind === 'crash') {
            // The next worker may write format 2 (a rolling upgrade in either direction).
            const fresh = await openMemoryStore();
            if (s.abandonedAt !== null) await abandonedRestore(changelog, fresh, s.abandonedAt, committed);
            ({ store, local } = await open(changelog, { local: fresh, carry: s.carry, ...(committed === undefined ? {} : { committed }) }));
            check('after a crash');
          } else {
            await store.closePartition(tp);
            if (s.toOther) {
              [local, other] = [other, local];
              if (otherStale) await local.batch([checkpoints.del(tp)]);
              otherStale = false;
            }
            if (s.abandonedAt !== null || s.toOther) {
              // A checkpoint put back by the abandoned restore, or one written when it ended first.
              if (s.abandonedAt !== null) await abandonedRestore(changelog, local, s.abandonedAt, committed);
              ({ store, local } = await open(changelog, { local, ...(committed === undefined ? {} : { committed }) }));
            } else if (s.newInstance) ({ store, local } = await open(changelog, { local, ...(committed === undefined ? {} : { committed }) }));
            else await store.openPartition(tp, committed);
            check('after a hand-back');
          }
        }
        // Whatever happened, a worker that restores now finds them.
        changelog.compact(changelogTp, changelog.partition(changelogTp).length, true);
        ({ store } = await open(changelog, committed === undefined ? {} : { committed }));
        check('at the end, compacted');
      }),
      // About 1 in 45 runs abandons a restore from a checkpoint after it wrote some of what it read.
      { numRuns: 1000 },
    );
  });
});
