import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { StateStore } from '../../../../src/graph/stores.js';
import { ChangelogStore, type RestoreReport } from '../../../../src/kafka/changelog/changelogStore.js';
import { MemoryChangelog } from './memoryChangelog.js';
import { checkpoints } from '../../../../src/kafka/changelog/checkpoints.js';
import { isPartitionReset, partitionId, PartitionResetError, type TopicPartition } from '../../../../src/ports/log.js';
import type { StoreOp } from '../../../../src/ports/store.js';
import type { LocalStore } from '../../../../src/state/levelStore.js';
import { openMemoryStore } from '../../../../src/state/levelStore.js';
import { stateKeys } from '../../../../src/state/stateKeys.js';

// The changelog's logic (what is written, what is read back, checkpoint or wipe) over an
// in-memory changelog; test/kafka/stateFollowsPartition.test.ts runs it on the broker.

const stores: StateStore[] = [
  { name: 'fx', kind: 'effects' },
  { name: 'hold', kind: 'park' },
];
const p0 = { topic: 'in', partition: 0 };
const p1 = { topic: 'in', partition: 1 };

async function worker(
  changelog: MemoryChangelog,
  local?: LocalStore,
  handedBackCleanly?: (tp: TopicPartition) => boolean,
  checkpointMaxAgeMs?: number,
  logger = pino({ level: 'silent' }),
) {
  const reports: RestoreReport[] = [];
  const store = new ChangelogStore({
    local: local ?? (await openMemoryStore()),
    group: 'g',
    stores,
    produce: changelog.produce,
    source: changelog,
    logger,
    onRestored: (r) => reports.push(r),
    ...(handedBackCleanly ? { handedBackCleanly } : {}),
    ...(checkpointMaxAgeMs !== undefined ? { checkpointMaxAgeMs } : {}),
  });
  return { store, reports };
}

/** An in-memory local store whose batches go through `batch`. */
async function withBatch(batch: (ops: readonly StoreOp[], local: LocalStore) => Promise<void>): Promise<LocalStore> {
  const local = await openMemoryStore();
  return {
    location: local.location,
    get: (key) => local.get(key),
    entries: (prefix, options) => local.entries(prefix, options),
    deletePrefix: (prefix, size) => local.deletePrefix(prefix, size),
    close: () => local.close(),
    batch: (ops) => batch(ops, local),
  };
}

const effect = (tp: TopicPartition, id: string) => stateKeys.effect('fx', tp, id);
const parked = (tp: TopicPartition, lane: string) => stateKeys.parkedKey('hold', tp, lane);

describe('ChangelogStore', () => {
  it('writes each op locally and to its store changelog, on its source partition', async () => {
    const changelog = new MemoryChangelog();
    const { store } = await worker(changelog);
    await store.batch([
      { type: 'put', key: effect(p0, 'e1'), value: { n: 1 } },
      { type: 'put', key: parked(p1, 'k'), value: { lane: 'k' } },
      { type: 'del', key: effect(p1, 'e0') },
    ]);
    expect(store.get(effect(p0, 'e1'))).toEqual({ n: 1 });
    expect(changelog.partition({ topic: 'g-fx-changelog', partition: 0 }).map((r) => r.key)).toEqual([effect(p0, 'e1')]);
    expect(changelog.partition({ topic: 'g-fx-changelog', partition: 1 })).toEqual([
      { topic: 'g-fx-changelog', partition: 1, key: effect(p1, 'e0'), value: null },
    ]);
    expect(changelog.partition({ topic: 'g-hold-changelog', partition: 1 }).map((r) => r.key)).toEqual([parked(p1, 'k')]);
  });

  it('stages a batch: landed once written locally and handed to the producer, durable once acknowledged; the next batch is produced after it', async () => {
    const produced: string[][] = [];
    const acks: Array<() => void> = [];
    const store = new ChangelogStore({
      local: await openMemoryStore(),
      group: 'g',
      stores,
      produce: (records) => {
        produced.push(records.map((r) => r.key!));
        return new Promise<void>((resolve) => acks.push(resolve));
      },
      source: new MemoryChangelog(),
      logger: pino({ level: 'silent' }),
    });
    const first = store.stage([{ type: 'put', key: effect(p0, 'e1'), value: { n: 1 } }]);
    let durable = false;
    void first.durable.then(() => (durable = true));
    await first.landed;
    expect(store.get(effect(p0, 'e1'))).toEqual({ n: 1 });
    expect(produced).toEqual([[effect(p0, 'e1')]]);
    const second = store.stage([{ type: 'put', key: effect(p0, 'e1'), value: { n: 2 } }]);
    await second.landed;
    // The second batch landed and was handed over while the first is unacknowledged: in order.
    expect(produced).toEqual([[effect(p0, 'e1')], [effect(p0, 'e1')]]);
    expect(store.get(effect(p0, 'e1'))).toEqual({ n: 2 });
    expect(durable).toBe(false);
    acks[0]!();
    await first.durable;
    acks[1]!();
    await second.durable;
  });

  it('refuses a key that is not a state key before writing anything', async () => {
    const changelog = new MemoryChangelog();
    const { store } = await worker(changelog);
    await expect(
      store.batch([
        { type: 'put', key: effect(p0, 'e1'), value: 1 },
        { type: 'put', key: 'loose', value: 2 },
      ]),
    ).rejects.toThrow("'loose' is not an orderly state key");
    expect(store.get(effect(p0, 'e1'))).toBeUndefined();
  });

  it("restores another worker's partition in full: its own keys of the partition wiped, the other partitions' kept", async () => {
    const changelog = new MemoryChangelog();
    const a = await worker(changelog);
    await a.store.batch([
      { type: 'put', key: effect(p0, 'e1'), value: 1 },
      { type: 'put', key: effect(p0, 'e2'), value: 2 },
      { type: 'put', key: parked(p0, 'k'), value: { lane: 'k' } },
      { type: 'del', key: effect(p0, 'e2') },
    ]);
    const local = await openMemoryStore();
    // Stale state of its own from long ago, of p0 and of p1.
    await local.batch([
      { type: 'put', key: effect(p0, 'stale'), value: 0 },
      { type: 'put', key: effect(p1, 'mine'), value: 9 },
    ]);
    const b = await worker(changelog, local);
    await b.store.openPartition(p0);
    expect(b.reports).toEqual([expect.objectContaining({ ...p0, mode: 'full', wiped: 1, records: 4 })]);
    expect(await b.store.entries(stateKeys.effectPrefix('fx'))).toEqual([
      [effect(p0, 'e1'), 1],
      [effect(p1, 'mine'), 9],
    ]);
    expect(b.store.get(parked(p0, 'k'))).toEqual({ lane: 'k' });
  });

  it('after a clean hand-back and return, reads only what others wrote after its checkpoint', async () => {
    const changelog = new MemoryChangelog();
    const localA = await openMemoryStore();
    const a = await worker(changelog, localA);
    await a.store.openPartition(p0);
    await a.store.batch([{ type: 'put', key: effect(p0, 'e1'), value: 1 }]);
    await a.store.closePartition(p0);
    expect(checkpoints.read(localA, p0)).toMatchObject({ offsets: { fx: 1, hold: 0 } });

    const b = await worker(changelog);
    await b.store.openPartition(p0);
    await b.store.batch([
      { type: 'put', key: effect(p0, 'e2'), value: 2 },
      { type: 'put', key: parked(p0, 'k'), value: { lane: 'k' } },
    ]);
    await b.store.closePartition(p0);

    await a.store.openPartition(p0);
    expect(a.reports.at(-1)).toMatchObject({ mode: 'checkpoint', wiped: 0, records: 2 });
    expect(checkpoints.read(localA, p0), 'deleted at take-over').toBeUndefined();
    expect(a.store.get(effect(p0, 'e2'))).toBe(2);
    expect(a.store.get(parked(p0, 'k'))).toEqual({ lane: 'k' });
  });

  it('after an unclean stop (no checkpoint), drops local writes the changelog never got', async () => {
    const changelog = new MemoryChangelog();
    const local = await openMemoryStore();
    const a = await worker(changelog, local);
    await a.store.openPartition(p0);
    await a.store.batch([{ type: 'put', key: effect(p0, 'e1'), value: 1 }]);
    changelog.failNext = true;
    await expect(a.store.batch([{ type: 'put', key: effect(p0, 'e2'), value: 2 }])).rejects.toThrow(
      'state of in/0 was written locally but its changelog write failed: broker down',
    );
    expect(local.get(effect(p0, 'e2')), 'ahead of the changelog').toBe(2);
    // A crash here: no closePartition. The restart opens the partition again.
    const again = await worker(changelog, local);
    await again.store.openPartition(p0);
    expect(again.reports).toEqual([expect.objectContaining({ mode: 'full', wiped: 2, records: 1 })]);
    expect(local.get(effect(p0, 'e1'))).toBe(1);
    expect(local.get(effect(p0, 'e2'))).toBeUndefined();
  });

  it('after a failed changelog write, sends no later write of that partition to the changelog (no gap), and still writes the others', async () => {
    const changelog = new MemoryChangelog();
    const { store } = await worker(changelog);
    changelog.failNext = new PartitionResetError('the transaction failed under this write');
    await expect(store.batch([{ type: 'put', key: effect(p0, 'e1'), value: 1 }])).rejects.toThrow('changelog write failed');
    const later = store.batch([{ type: 'put', key: effect(p0, 'e2'), value: 2 }]);
    await expect(later).rejects.toThrow(/state of in\/0 not written: an earlier changelog write of in\/0 failed/);
    // Caused by the first failure: a reset of the partition (exactly-once) resets this write's event too.
    expect(isPartitionReset(await later.catch((error: unknown) => error))).toBe(true);
    await store.batch([{ type: 'put', key: effect(p1, 'e3'), value: 3 }]);
    expect(changelog.partition({ topic: 'g-fx-changelog', partition: 0 })).toEqual([]);
    expect(changelog.partition({ topic: 'g-fx-changelog', partition: 1 })).toHaveLength(1);
    // Taken over again (restored from its changelog), the partition is written again.
    await store.openPartition(p0);
    await store.batch([{ type: 'put', key: effect(p0, 'e4'), value: 4 }]);
    expect(changelog.partition({ topic: 'g-fx-changelog', partition: 0 })).toHaveLength(1);
  });

  it('writes no checkpoint after a failed changelog write, nor for a lost partition', async () => {
    const changelog = new MemoryChangelog();
    const local = await openMemoryStore();
    const lost = new Set<string>([partitionId(p1)]);
    const a = await worker(changelog, local, (tp) => !lost.has(partitionId(tp)));
    await a.store.openPartition(p0);
    await a.store.openPartition(p1);
    changelog.failNext = true;
    await expect(a.store.batch([{ type: 'put', key: effect(p0, 'e1'), value: 1 }])).rejects.toThrow();
    await a.store.closePartition(p0);
    await a.store.closePartition(p1);
    expect(checkpoints.read(local, p0)).toBeUndefined();
    expect(checkpoints.read(local, p1)).toBeUndefined();
    // Taken over again cleanly, p0 checkpoints once more.
    await a.store.openPartition(p0);
    await a.store.closePartition(p0);
    expect(checkpoints.read(local, p0)).toBeDefined();
  });

  it('restores in full when its checkpoint lies past the end of the changelog (the topic was recreated)', async () => {
    const changelog = new MemoryChangelog();
    const local = await openMemoryStore();
    await local.batch([checkpoints.put(p0, { offsets: { fx: 50, hold: 0 }, writtenAtMs: 1 }), { type: 'put', key: effect(p0, 'old'), value: 1 }]);
    const a = await worker(changelog, local);
    await a.store.openPartition(p0);
    expect(a.reports).toEqual([expect.objectContaining({ mode: 'full', reason: expect.stringMatching(/outside the changelog/), wiped: 1 })]);
    expect(local.get(effect(p0, 'old'))).toBeUndefined();
  });

  it("restores the records of several polls in one local write, each key's last; after its wipe, a key put then deleted is not written at all", async () => {
    const changelog = new MemoryChangelog();
    const a = await worker(changelog);
    await a.store.batch([
      { type: 'put', key: effect(p0, 'e1'), value: { n: 1 } },
      { type: 'put', key: effect(p0, 'e2'), value: { n: 2 } },
    ]);
    await a.store.batch([{ type: 'del', key: effect(p0, 'e1') }]);
    await a.store.batch([
      { type: 'put', key: effect(p0, 'e2'), value: { n: 22 } },
      { type: 'put', key: parked(p0, 'k'), value: { lane: 'k' } },
    ]);
    changelog.pollSize = 2;
    const restore = async (restoreBatchBytes?: number) => {
      const written: StoreOp[][] = [];
      const store = new ChangelogStore({
        local: await withBatch((ops, local) => {
          written.push([...ops]);
          return local.batch(ops);
        }),
        group: 'g',
        stores,
        produce: changelog.produce,
        source: changelog,
        logger: pino({ level: 'silent' }),
        ...(restoreBatchBytes === undefined ? {} : { restoreBatchBytes }),
      });
      await store.openPartition(p0);
      expect(store.get(effect(p0, 'e1'))).toBeUndefined();
      expect(store.get(effect(p0, 'e2'))).toEqual({ n: 22 });
      expect(store.get(parked(p0, 'k'))).toEqual({ lane: 'k' });
      return written.map((ops) => ops.map((op) => `${op.type} ${op.key}`));
    };
    // Two polls of the fx changelog and one of hold's, in one write.
    expect(await restore()).toEqual([[`put ${effect(p0, 'e2')}`, `put ${parked(p0, 'k')}`]]);
    // A write per poll when each poll fills a write, in the order read: e1, written, is deleted.
    expect(await restore(1)).toEqual([
      [`put ${effect(p0, 'e1')}`, `put ${effect(p0, 'e2')}`],
      [`del ${effect(p0, 'e1')}`, `put ${effect(p0, 'e2')}`],
      [`put ${parked(p0, 'k')}`],
    ]);
  });

  it('fails a restore whose local write fails, whichever write it is', async () => {
    const changelog = new MemoryChangelog();
    const a = await worker(changelog);
    for (let i = 0; i < 4; i++) await a.store.batch([{ type: 'put', key: effect(p0, `e${i}`), value: i }]);
    changelog.pollSize = 1;
    for (const failing of [1, 2, 4]) {
      let writes = 0;
      const store = new ChangelogStore({
        local: await withBatch((ops, local) => (++writes === failing ? Promise.reject(new Error(`disk full at write ${writes}`)) : local.batch(ops))),
        group: 'g',
        stores,
        produce: changelog.produce,
        source: changelog,
        logger: pino({ level: 'silent' }),
        restoreBatchBytes: 1,
      });
      await expect(store.openPartition(p0), `write ${failing}`).rejects.toThrow(`disk full at write ${failing}`);
    }
  });

  it('restores in full when its checkpoint is older than checkpointMaxAgeMs (tombstones written since may be gone)', async () => {
    const changelog = new MemoryChangelog();
    const local = await openMemoryStore();
    const a = await worker(changelog, local, undefined, 60_000);
    await a.store.openPartition(p0);
    await a.store.batch([{ type: 'put', key: effect(p0, 'e1'), value: 1 }]);
    await a.store.closePartition(p0);
    // Back within the age: from the checkpoint.
    await a.store.openPartition(p0);
    await a.store.closePartition(p0);
    expect(a.reports.at(-1)).toMatchObject({ mode: 'checkpoint', records: 0 });
    // Back after longer: the checkpoint is not trusted, the partition is read from the start.
    const { offsets } = checkpoints.read(local, p0)!;
    await local.batch([checkpoints.put(p0, { offsets, writtenAtMs: Date.now() - 61_000 })]);
    await a.store.openPartition(p0);
    expect(a.reports.at(-1)).toMatchObject({ mode: 'full', reason: expect.stringMatching(/checkpoint is 61 s old, past 60 s/), wiped: 1, records: 1 });
    expect(local.get(effect(p0, 'e1'))).toBe(1);
  });
});

describe('ChangelogStore: a restore abandoned by a stop', () => {
  /**
   * Worker A hands p0 back with e0 in its checkpoint; worker B then writes e1..e5 and deletes e0.
   * A takes p0 back (from its checkpoint, or in full once the checkpoint is gone), reading one
   * record per poll and writing each poll locally, and is stopped as the `abortAt`th poll comes.
   */
  async function abandoned(from: 'full' | 'checkpoint', abortAt: number, failure?: Error) {
    const changelog = new MemoryChangelog();
    const local = await openMemoryStore();
    const logged: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) });
    const store = new ChangelogStore({ local, group: 'g', stores, produce: changelog.produce, source: changelog, logger, restoreBatchBytes: 1 });
    await store.openPartition(p0);
    await store.batch([{ type: 'put', key: effect(p0, 'e0'), value: 0 }]);
    await store.closePartition(p0);
    if (from === 'full') await local.batch([checkpoints.del(p0)]);
    const before = checkpoints.read(local, p0);
    const b = await worker(changelog);
    for (let i = 1; i <= 5; i++) await b.store.batch([{ type: 'put', key: effect(p0, `e${i}`), value: i }]);
    await b.store.batch([{ type: 'del', key: effect(p0, 'e0') }]);
    changelog.pollSize = 1;
    const stop = new AbortController();
    const read = changelog.read.bind(changelog);
    let polls = 0;
    changelog.read = (ranges, apply) =>
      read(ranges, async (messages) => {
        if (++polls === abortAt) {
          stop.abort(new Error('the engine stops'));
          // The restore's own failure, as the stop comes.
          if (failure) throw failure;
        }
        await apply(messages);
      });
    const opened = store.openPartition(p0, undefined, stop.signal);
    const abandonment = await opened.then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    changelog.read = read;
    return { abandonment, reason: stop.signal.reason as unknown, local, store, before, polls, logged };
  }

  const complete = (store: ChangelogStore) => [0, 1, 2, 3, 4, 5].map((i) => store.get(effect(p0, `e${i}`)));

  it('a restore from a checkpoint ends at the poll that saw the abort, keeps what landed, puts the checkpoint back, and the next restore from it ends complete', async () => {
    const { abandonment, reason, local, store, before, polls, logged } = await abandoned('checkpoint', 4);
    expect(abandonment?.message).toBe('restore of in/0 abandoned after reading 3 changelog records: the engine stops; the partition is not run');
    expect(abandonment?.cause, 'the engine tells its abort by the cause').toBe(reason);
    expect(polls, 'no poll read after the abort').toBe(4);
    // The prefix read landed: e1..e3 are there, e0 (deleted after them) still is.
    expect(complete(store)).toEqual([0, 1, 2, 3, undefined, undefined]);
    expect(checkpoints.read(local, p0)).toEqual(before);
    // The fields of a restore's own line, so that one query finds both.
    expect(logged.at(-1)).toMatchObject({
      msg: 'abandoned the restore of in/0 (checkpoint): the worker stops; its checkpoint is kept: the next restore here reads from it',
      topic: 'in',
      partition: 0,
      mode: 'checkpoint',
      records: 3,
    });
    expect(logged.at(-1)!.tookMs).toEqual(expect.any(Number));
    await store.openPartition(p0);
    expect(logged.at(-1)).toMatchObject({ mode: 'checkpoint', records: 6 });
    expect(complete(store)).toEqual([undefined, 1, 2, 3, 4, 5]);
  });

  it('a full restore ends the same way and leaves no checkpoint: the next restore is full and ends complete', async () => {
    const { abandonment, store, local, logged } = await abandoned('full', 3);
    expect(abandonment?.message).toMatch(/^restore of in\/0 abandoned after reading 2 changelog records/);
    expect(logged.at(-1)).toMatchObject({
      msg: 'abandoned the restore of in/0 (full): the worker stops; the next restore here is full',
      mode: 'full',
      records: 2,
    });
    expect(checkpoints.read(local, p0)).toBeUndefined();
    await store.openPartition(p0);
    expect(logged.at(-1)).toMatchObject({
      mode: 'full',
      reason: expect.stringMatching(/^no checkpoint: this worker never owned the partition, .* or stopped while it restored it in full$/),
    });
    expect(complete(store)).toEqual([undefined, 1, 2, 3, 4, 5]);
  });

  it("a restore's own failure that comes as it stops is not taken for an abandonment: no checkpoint is put back", async () => {
    const broker = new Error('broker gone');
    const { abandonment, local, logged } = await abandoned('checkpoint', 2, broker);
    expect(abandonment).toBe(broker);
    expect(checkpoints.read(local, p0)).toBeUndefined();
    expect(logged.filter((line) => String(line.msg).startsWith('abandoned'))).toEqual([]);
  });
});
