import type { Logger } from 'pino';
import type { StateStore } from '../../graph/stores.js';
import { partitionId, type OutRecord, type TopicPartition } from '../../ports/log.js';
import { isAbandonment, type EntriesOptions, type StagedBatch, type Store, type StoreOp } from '../../ports/store.js';
import type { LocalStore } from '../../state/levelStore.js';
import { stateKeys } from '../../state/stateKeys.js';
import type { ChangelogEnds, ChangelogMessage, ChangelogRange } from './changelogReader.js';
import { CarriedEffects, type CarriedEffect } from './carriedEffects.js';
import { RestoreWrites } from './changelogRecords.js';
import { changelogTopic, encodeWrite, type WrittenFormat } from './changelogWrite.js';
import { checkpoints, type Checkpoint } from './checkpoints.js';

/** Where a restore reads changelogs from (Kafka's {@link ChangelogReader}). */
export interface ChangelogSource {
  /** The partition's low and end offsets; when `signal` aborts, rejects with an error whose `cause` is its reason. */
  ends(tp: TopicPartition, signal?: AbortSignal): Promise<ChangelogEnds>;
  /** Reads the ranges to their ends, handing each polled batch to `apply`; when `signal` aborts, ends at once and rejects with an error whose `cause` is its reason. */
  read(ranges: readonly ChangelogRange[], apply: (messages: readonly ChangelogMessage[]) => Promise<void>, signal?: AbortSignal): Promise<number>;
  close(): Promise<void>;
}

/** How a partition's state was restored when this worker took it over. */
export interface RestoreReport extends TopicPartition {
  /** `checkpoint`: the local state was complete up to a checkpoint, only what follows it was read; `full`: wiped and read from the beginning. */
  readonly mode: 'checkpoint' | 'full';
  /** Why a full restore (no checkpoint: an unclean stop, or the partition was never here). */
  readonly reason?: string;
  /** Local keys of the partition deleted before a full restore. */
  readonly wiped: number;
  /** Changelog records applied. */
  readonly records: number;
  readonly tookMs: number;
}

export interface ChangelogStoreOptions {
  /** The worker's local state (LevelDB). */
  readonly local: LocalStore;
  /** The consumer group: changelog topics are `<group>-<store>-changelog`. */
  readonly group: string;
  /** The topology's stores, each with its changelog. */
  readonly stores: readonly StateStore[];
  /**
   * Appends records, settling once they are acknowledged: the Log port's produce, the outputs'
   * producer. The records of successive calls must be appended in call order (librdkafka's
   * queue, idempotent producer): batches are pipelined, so a batch's records are handed over
   * while the previous batch's are still unacknowledged.
   */
  readonly produce: (records: readonly OutRecord[]) => Promise<void>;
  readonly source: ChangelogSource;
  readonly logger: Logger;
  /**
   * False when the partition was taken away without a revocation (this worker was fenced): a new
   * owner may have written to its changelogs already, so no checkpoint is written. @defaultValue always true
   */
  readonly handedBackCleanly?: (tp: TopicPartition) => boolean;
  /** Hears how each taken-over partition was restored. */
  readonly onRestored?: (report: RestoreReport) => void;
  /** Deletes per batch when a partition is wiped. @defaultValue 10000 */
  readonly wipeBatch?: number;
  /**
   * A restore gathers the records it reads into one local write until they hold this many bytes
   * (keys and values), so that a key written again or deleted within them is written once.
   * @defaultValue 1 MiB
   */
  readonly restoreBatchBytes?: number;
  /**
   * A checkpoint older than this is not used: the partition is wiped and restored in full. A
   * changelog keeps a tombstone only `delete.retention.ms` after its first cleaning, so a read from
   * an older checkpoint may miss a delete (docs/state.md, "How long tombstones stay").
   * @defaultValue no limit
   */
  readonly checkpointMaxAgeMs?: number;
  /**
   * The stored format of the changelog records written: 4, records without headers, a table row's
   * record carrying the effect records of its events (one changelog record per event instead of
   * two); 2, which workers of an orderly before format 4 can restore (the first step of a rolling
   * upgrade from one, docs/state.md). @defaultValue 4
   */
  readonly storedFormat?: WrittenFormat;
}

/**
 * The Store port over a local store whose every write also goes to a compacted changelog topic,
 * so that a partition's state follows it to whichever worker takes it over.
 *
 * - `batch` writes the local store, then the changelog records of the ops (one per op, on the
 *   op's source partition), and settles once Kafka acknowledged them: an event's offset is
 *   committed only after its state is in the changelog.
 * - `openPartition` restores the partition before the engine reads it: from the local checkpoint
 *   if the partition was handed back cleanly by this worker, otherwise (an unclean stop, which may
 *   have left local writes the changelog lacks, or a partition new here) the partition's local
 *   keys are wiped and its changelogs read from the beginning.
 * - `closePartition` writes the checkpoint.
 */
export class ChangelogStore implements Store {
  readonly location: string;
  /** Partitions with a local write whose changelog write failed (with that failure): their local state is ahead of the changelog. */
  private readonly diverged = new Map<string, Error>();
  private readonly logger: Logger;
  /** Which effect records the rows' changelog records carry. */
  private readonly carried: CarriedEffects;

  constructor(private readonly options: ChangelogStoreOptions) {
    this.location = options.local.location;
    this.logger = options.logger;
    // Kept at format 2 too: the rows' records that a restore reads may carry records (written by a
    // worker at format 3 or 4), and the rows' next records must not drop them.
    this.carried = new CarriedEffects(options.storedFormat ?? 4);
  }

  get<T>(key: string): T | undefined {
    return this.options.local.get<T>(key);
  }

  entries<T>(prefix: string, options?: EntriesOptions): Promise<Array<[string, T]>> {
    return this.options.local.entries<T>(prefix, options);
  }

  async batch(ops: readonly StoreOp[]): Promise<void> {
    await this.stage(ops).durable;
  }

  /**
   * Writes the local store, then hands the changelog records to the producer: `landed` settles
   * once both are done (so the next batch's records are produced after these, and each changelog
   * partition holds the writes in the order they landed locally), `durable` once Kafka has
   * acknowledged them.
   */
  stage(ops: readonly StoreOp[]): StagedBatch {
    if (ops.length === 0) return { landed: Promise.resolve(), durable: Promise.resolve() };
    const refused = this.refusedAfterGap(ops);
    if (refused) {
      const failed = Promise.reject(refused);
      failed.catch(() => undefined);
      return { landed: failed, durable: failed };
    }
    const { local, group } = this.options;
    // Built first: a key that is not a state key fails the batch before anything is written.
    // Each value is encoded to JSON once, for LevelDB and the changelog alike.
    const encoded = ops.map((op) => encodeWrite(group, op));
    // Each effect record rides with its event's row where it can: one changelog record for both.
    const records = this.carried.records(ops, encoded);
    const writes = encoded.map((write) => write.local);
    let acked!: Promise<void>;
    const landed = local.batch(writes as StoreOp[]).then(() => {
      // A write of the partition failed while this one was written locally: its records stay here.
      const refusedNow = this.refusedAfterGap(ops);
      acked = refusedNow ? Promise.reject(refusedNow) : this.produce(ops, records);
    });
    return { landed, durable: landed.then(() => acked) };
  }

  /**
   * The error for a batch that writes a partition whose changelog write failed: its records must
   * not follow the failed ones into the changelog, which would then hold this batch without the
   * earlier one (a gap that a restore would read as complete). The partition is reset by a
   * restart, from a changelog that ends before the failed write.
   */
  private refusedAfterGap(ops: readonly StoreOp[]): Error | undefined {
    if (this.diverged.size === 0) return undefined;
    const gapped = ops.map((op) => partitionId(stateKeys.partitionOf(op.key))).find((id) => this.diverged.has(id));
    if (gapped === undefined) return undefined;
    // Caused by the failure: one that resets the partition (exactly-once) resets this write's event too.
    const cause = this.diverged.get(gapped)!;
    return new Error(`state of ${gapped} not written: an earlier changelog write of ${gapped} failed (${cause.message}), so it restarts from its changelog`, {
      cause,
    });
  }

  /** Appends the changelog records of a batch already written locally; a failure leaves its partitions diverged. */
  private async produce(ops: readonly StoreOp[], records: readonly OutRecord[]): Promise<void> {
    try {
      await this.options.produce(records);
    } catch (error) {
      const tps = new Map(ops.map((op) => stateKeys.partitionOf(op.key)).map((tp) => [partitionId(tp), tp]));
      const partitions = [...tps.keys()];
      const failed = new Error(`state of ${partitions.join(', ')} was written locally but its changelog write failed: ${(error as Error).message}`, {
        cause: error,
      });
      for (const id of partitions) if (!this.diverged.has(id)) this.diverged.set(id, failed);
      // A checkpoint written before this late batch would claim a completeness the changelog lacks.
      await this.options.local.batch([...tps.values()].map(checkpoints.del)).catch(() => undefined);
      throw failed;
    }
  }

  /** The engine committed the partition up to `offset`: effect records of events below it are not carried again. */
  committed(tp: TopicPartition, offset: number): void {
    this.carried.committed(tp, offset);
  }

  /**
   * Restores the partition (see the class). When `signal` aborts, a restore still under way ends
   * at once (the changelog read, the wait for its offsets and the wipe end; a local write under
   * way lands first) and rejects with an error whose `cause` is `signal.reason`. A restore from a
   * checkpoint then puts that checkpoint back (the next one here reads from it again); a full
   * restore leaves none (the next one is full).
   */
  async openPartition(tp: TopicPartition, committed?: number, signal?: AbortSignal): Promise<void> {
    const { local, stores } = this.options;
    // What this worker knew of the partition's carried records is replaced by what the restore reads.
    this.carried.dropPartition(tp);
    if (committed !== undefined) this.carried.committed(tp, committed);
    if (stores.length === 0) return;
    const startedAt = Date.now();
    const checkpoint = checkpoints.read(local, tp);
    // Gone before anything is written: from here on the local state may move past it.
    if (checkpoint) await local.batch([checkpoints.del(tp)]);
    this.diverged.delete(partitionId(tp));
    const progress: RestoreProgress = { wiping: false, read: 0, writing: Promise.resolve() };
    let report: RestoreReport;
    try {
      report = await this.restore(tp, committed, checkpoint, startedAt, progress, signal);
    } catch (error) {
      // The local write under way lands (or fails) before the store may close.
      const landed = await progress.writing.then(
        () => true,
        () => false,
      );
      this.carried.dropPartition(tp);
      // An abandonment has an aborted signal: `signal` is there below.
      if (!isAbandonment(error, signal)) throw error;
      // Abandoned. Unless a wipe began, the local state is the checkpoint's plus a prefix of what
      // follows it, each gathered write whole and in order: the checkpoint still vouches for it,
      // and a read from it again applies that prefix again to the same end.
      const mode = checkpoint && !progress.wiping ? 'checkpoint' : 'full';
      const kept =
        mode === 'checkpoint' &&
        landed &&
        (await local.batch([checkpoints.put(tp, checkpoint!)]).then(
          () => true,
          () => false,
        ));
      const abandoned = { ...tp, mode, records: progress.read, tookMs: Date.now() - startedAt };
      const next = kept ? 'its checkpoint is kept: the next restore here reads from it' : 'the next restore here is full';
      this.logger.info(abandoned, `abandoned the restore of ${partitionId(tp)} (${mode}): the worker stops; ${next}`);
      throw abandonment(signal!, tp, progress.read);
    }
    this.logger.info(report, `restored the state of ${partitionId(tp)} from its changelog (${report.mode})`);
    this.options.onRestored?.(report);
  }

  /** {@link openPartition}'s restore, once the checkpoint is read and deleted; `progress` says how far it went. */
  private async restore(
    tp: TopicPartition,
    committed: number | undefined,
    checkpoint: Checkpoint | undefined,
    startedAt: number,
    progress: RestoreProgress,
    signal: AbortSignal | undefined,
  ): Promise<RestoreReport> {
    const { local, stores, source } = this.options;
    const changelogs = stores.map((store) => ({ store: store.name, topic: changelogTopic(this.options.group, store.name), partition: tp.partition }));
    const ends = await Promise.all(changelogs.map((c) => source.ends(c, signal)));
    const inside = checkpoint && changelogs.every((c, i) => within(checkpoint.offsets[c.store], ends[i]!));
    const ageMs = checkpoint ? startedAt - checkpoint.writtenAtMs : 0;
    const maxAgeMs = this.options.checkpointMaxAgeMs;
    const usable = inside && (maxAgeMs === undefined || ageMs <= maxAgeMs);
    let wiped = 0;
    let reason: string | undefined;
    if (!usable) {
      reason = !checkpoint
        ? 'no checkpoint: this worker never owned the partition, or stopped uncleanly while it owned it, or stopped while it restored it in full'
        : !inside
          ? 'its checkpoint lies outside the changelog (was the changelog topic recreated?)'
          : `its checkpoint is ${Math.round(ageMs / 1_000)} s old, past ${Math.round(maxAgeMs! / 1_000)} s (half the changelogs' delete.retention.ms): a read from it might miss a delete`;
      abandonIf(signal, tp, 0);
      progress.wiping = true;
      wiped = await this.wipe(tp, signal);
    } else if (checkpoint.carried) {
      this.seedCarried(checkpoint.carried, committed);
    }
    const ranges = changelogs.map((c, i): ChangelogRange => ({
      topic: c.topic,
      partition: c.partition,
      from: usable ? checkpoint.offsets[c.store]! : ends[i]!.low,
      to: ends[i]!.end,
    }));
    // Several polls' records in one local write, each key's last: fewer and larger LevelDB
    // batches, and an effect record put then pruned within them costs one delete. One write at
    // a time, in order; the next polls are read while it lands.
    // After a wipe, the delete of a key this restore never wrote is a delete of nothing.
    const gathered = new RestoreWrites(usable ? undefined : { prefixes: stateKeys.partitionPrefixes(stores, tp), maxKeys: RESTORE_REMEMBERED_KEYS }, {
      carried: this.carried,
      committed,
    });
    const limit = this.options.restoreBatchBytes ?? RESTORE_BATCH_BYTES;
    const write = async (): Promise<void> => {
      await progress.writing;
      // No write starts once abandoned: the one under way is the last.
      abandonIf(signal, tp, progress.read);
      progress.writing = local.batch(gathered.take() as StoreOp[]);
      // Awaited by the next write or at the end; a failure fails the read there.
      progress.writing.catch(() => undefined);
    };
    abandonIf(signal, tp, 0);
    const records = await source.read(
      ranges,
      async (messages) => {
        abandonIf(signal, tp, progress.read);
        progress.read += messages.length;
        gathered.add(messages);
        if (gathered.addedBytes >= limit) await write();
      },
      signal,
    );
    if (gathered.size > 0) await write();
    await progress.writing;
    return { ...tp, mode: usable ? 'checkpoint' : 'full', ...(reason ? { reason } : {}), wiped, records, tookMs: Date.now() - startedAt };
  }

  /**
   * What the rows' last records carried when the partition was handed back, from its checkpoint, the
   * values from the local store (a restore from the same checkpoint abandoned before may have put a
   * later event's record at a ring position: this restore reads that write again, which supersedes it).
   */
  private seedCarried(carried: NonNullable<Checkpoint['carried']>, committed: number | undefined): void {
    const byRow = new Map<string, CarriedEffect[]>();
    for (const [row, ringKey, offset] of carried) {
      if (committed !== undefined && offset < committed) continue;
      const value = this.options.local.get(ringKey);
      if (value === undefined) continue;
      const effects = byRow.get(row) ?? [];
      effects.push({ ringKey, offset, json: JSON.stringify(value) });
      byRow.set(row, effects);
    }
    for (const [row, effects] of byRow) this.carried.restoredRow(row, effects);
  }

  async closePartition(tp: TopicPartition): Promise<void> {
    const { local, stores, source } = this.options;
    if (stores.length === 0) return;
    const id = partitionId(tp);
    // The effect records its rows carry that a redelivery may need: a later restore here reads
    // from the checkpoint on, so it would not see the rows' records that carry them.
    const carried = this.carried.takePartition(tp);
    if (this.diverged.delete(id)) {
      this.logger.warn({ partition: id }, 'no checkpoint: a changelog write of this partition failed; the next owner here restores it in full');
      return;
    }
    if (!(this.options.handedBackCleanly?.(tp) ?? true)) {
      this.logger.info({ partition: id }, 'no checkpoint: the partition was lost, not handed back');
      return;
    }
    try {
      const offsets: Record<string, number> = {};
      for (const store of stores) {
        offsets[store.name] = (await source.ends({ topic: changelogTopic(this.options.group, store.name), partition: tp.partition })).end;
      }
      const checkpoint: Checkpoint = { offsets, writtenAtMs: Date.now(), ...(carried.length > 0 ? { carried } : {}) };
      await local.batch([checkpoints.put(tp, checkpoint)]);
      this.logger.debug({ partition: id, offsets }, 'checkpoint written');
    } catch (error) {
      // Without a checkpoint the next take-over here restores in full: slower, never wrong.
      this.logger.warn({ partition: id, err: error }, 'no checkpoint: reading the changelog offsets or writing the checkpoint failed');
    }
  }

  async close(): Promise<void> {
    try {
      await this.options.source.close();
    } finally {
      await this.options.local.close();
    }
  }

  /** Deletes every local key of the partition; returns how many. Ends between stores' prefixes once `signal` aborts. */
  private async wipe(tp: TopicPartition, signal: AbortSignal | undefined): Promise<number> {
    const { local, stores } = this.options;
    let wiped = 0;
    for (const prefix of stateKeys.partitionPrefixes(stores, tp)) {
      abandonIf(signal, tp, 0);
      wiped += await local.deletePrefix(prefix, this.options.wipeBatch);
    }
    return wiped;
  }
}

/** Bytes of changelog records a restore gathers into one local write (per partition restored). */
const RESTORE_BATCH_BYTES = 2 ** 20;
/** Keys a full restore remembers writing, to leave out the deletes of the others (about 100 bytes each). */
const RESTORE_REMEMBERED_KEYS = 50_000;

/** How far an {@link ChangelogStore.openPartition} restore went, for an abandoned one. */
interface RestoreProgress {
  /** The partition's local keys began to be wiped: the checkpoint no longer vouches for them. */
  wiping: boolean;
  /** Changelog records read. */
  read: number;
  /** The local write last started. */
  writing: Promise<void>;
}

/** The error of a restore of `tp` abandoned when `signal` aborted, `read` changelog records in: its `cause` is the signal's reason. */
function abandonment(signal: AbortSignal, tp: TopicPartition, read: number): Error {
  const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
  return new Error(`restore of ${partitionId(tp)} abandoned after reading ${read} changelog records: ${reason}; the partition is not run`, {
    cause: signal.reason,
  });
}

/** Throws {@link abandonment} if `signal` aborted. */
function abandonIf(signal: AbortSignal | undefined, tp: TopicPartition, read: number): void {
  if (signal?.aborted) throw abandonment(signal, tp, read);
}

function within(offset: number | undefined, ends: ChangelogEnds): boolean {
  return offset !== undefined && Number.isInteger(offset) && offset >= ends.low && offset <= ends.end;
}
