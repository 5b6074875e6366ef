import type { Clock, Timer } from '../src/ports/clock.js';
import type { AssignedPartition, AtomicOptions, CommitOffset, Log, LogListener, LogRecord, OutRecord, TopicPartition } from '../src/ports/log.js';
import { readOffsetMetadata, writeOffsetMetadata, type OffsetRange } from '../src/engine/offsetMetadata.js';
import { CommitRefusedError, partitionId } from '../src/ports/log.js';
import type { EntriesOptions, StagedBatch, Store, StoreOp } from '../src/ports/store.js';
import type { DriverIo } from './driverIo.js';
import type { DriverTransaction } from './driverTransaction.js';
import type { LandedOverlay } from './landedOverlay.js';
import type { MemoryLog } from './memoryLog.js';
import { stateKeys } from '../src/state/stateKeys.js';

/** Faults of a {@link GatedStore}, each breaking one path on purpose (see DriverOptions.faults). */
export interface StoreFaults {
  /** A batch that records an effect is written in two, in this order. */
  readonly splitEffectBatch?: 'state-first' | 'record-first';
  /** A staged batch says it is durable once it has landed, before its acknowledgement. */
  readonly durableAtLanding?: boolean;
  /** Writes the store leaves out of a batch, as an engine that skipped them would. */
  readonly dropWrite?: (op: StoreOp) => boolean;
  /** Reads of run journals (`run/...`) find nothing, as an engine that skipped the journal lookup of `ctx.step` would. */
  readonly skipRunJournal?: boolean;
  /**
   * A batch that prunes effect records of a partition, or replaces one at its ring position, prunes
   * every one the partition holds, those at or above the committed offset too, as an engine that
   * pruned past its commit would.
   */
  readonly pruneAheadOfCommit?: boolean;
}

/** How one engine instance's store reaches the driver's state. */
export interface GatedStoreOptions {
  /** The durable state (what a restart finds). */
  readonly state: () => Store;
  /** Present for a staged store: where batches land before they are durable. */
  readonly overlay?: LandedOverlay;
  /** Present on an exactly-once log: acknowledged batches wait in it until it is committed. */
  readonly transaction?: DriverTransaction;
  /** Hears each batch once it is acknowledged (plain or staged: durable; exactly-once: in the open transaction). */
  readonly acknowledged: (ops: readonly StoreOp[]) => void;
  /** Hears each batch once it is durable (exactly-once: the transaction holding it committed). */
  readonly madeDurable: (ops: readonly StoreOp[]) => void;
  readonly faults?: StoreFaults;
  /**
   * Present when partitions are restored (see DriverOptions.restoreMs): how long each one's
   * restore takes on the instance's clock.
   */
  readonly restore?: {
    readonly clock: Clock;
    readonly ms: (partition: number) => number;
    /** Hears each restore begin, and each one abandoned. */
    readonly observe: (what: 'begun' | 'abandoned') => void;
  };
}

/**
 * The Store port of one engine instance: reads go straight to the state, writes and scans wait
 * for the driver. Plain, a batch is durable once the driver runs it. Staged (with an overlay), it
 * is {@link Store.stage}d as on Kafka's changelog store: it lands in the instance's overlay when
 * the driver runs it (the next reads see it), and becomes durable through a second operation, its
 * acknowledgement, which the driver runs later in the acknowledgements' own order; a crash
 * between the two loses it, as an unclean stop loses what the changelog never acknowledged.
 */
export class GatedStore implements Store {
  readonly stage?: (ops: readonly StoreOp[]) => StagedBatch;
  readonly openPartition?: (tp: TopicPartition, committed: number | undefined, signal?: AbortSignal) => Promise<void>;

  constructor(
    private readonly owner: string,
    private readonly io: DriverIo,
    private readonly options: GatedStoreOptions,
  ) {
    if (options.overlay) this.stage = (ops) => this.stageSplit(ops);
    if (options.restore) this.openPartition = (tp, _committed, signal) => this.restore(tp, options.restore!, signal);
  }

  get location(): string {
    return this.options.state().location;
  }

  get<T>(key: string): T | undefined {
    if (this.options.faults?.skipRunJournal && key.startsWith('run/')) return undefined;
    return (this.options.overlay ?? this.options.state()).get<T>(key);
  }

  batch(ops: readonly StoreOp[]): Promise<void> {
    if (this.stage) return this.stage(ops).durable;
    const [first, second] = this.split(ops);
    if (second) return this.write(first).then(() => this.write(second));
    return this.write(first);
  }

  entries<T>(prefix: string, options?: EntriesOptions): Promise<Array<[string, T]>> {
    const from = this.options.overlay ?? this.options.state();
    return this.io.enqueue(this.owner, { kind: 'scan', prefix }, () => from.entries<T>(prefix, options));
  }

  async close(): Promise<void> {
    // The driver owns the state and closes it; an engine instance only lets go of it.
  }

  /**
   * A partition's restore, as the changelog store's takes time: it ends `ms` later on the
   * instance's clock, through a `restore` request (a crash point), unless the engine's stop or
   * failure aborts it first; then it rejects at once with the signal's reason as its cause, as
   * {@link Store.openPartition} says. The state itself needs no restoring here: a new instance
   * reads the durable state, without what the crashed one had landed.
   */
  private restore(tp: TopicPartition, restore: NonNullable<GatedStoreOptions['restore']>, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: Timer | undefined;
      const abandon = () => {
        restore.observe('abandoned');
        timer?.cancel();
        reject(new Error(`the restore of ${partitionId(tp)} was abandoned`, { cause: signal!.reason }));
      };
      restore.observe('begun');
      if (signal?.aborted) return abandon();
      signal?.addEventListener('abort', abandon, { once: true });
      timer = restore.clock.setTimer(restore.ms(tp.partition), () => {
        this.io
          .enqueue(this.owner, { kind: 'restore', partition: tp }, async () => undefined)
          .then(
            () => {
              signal?.removeEventListener('abort', abandon);
              resolve();
            },
            (error: unknown) => reject(error as Error),
          );
      });
    });
  }

  /** The batch's ops without the dropped ones, in one part or, split on purpose, two. */
  private split(ops: readonly StoreOp[]): [StoreOp[], StoreOp[]?] {
    const { dropWrite, splitEffectBatch } = this.options.faults ?? {};
    const kept = dropWrite ? ops.filter((op) => !dropWrite(op)) : [...ops];
    if (!splitEffectBatch) return [kept];
    const isEffect = (op: StoreOp) => op.type === 'put' && (op.key.startsWith('effect/') || op.key.startsWith('ring/'));
    const [rest, effects] = [kept.filter((op) => !isEffect(op)), kept.filter(isEffect)];
    if (rest.length === 0 || effects.length === 0) return [kept];
    return splitEffectBatch === 'state-first' ? [rest, effects] : [effects, rest];
  }

  private write(ops: StoreOp[]): Promise<void> {
    const { state, acknowledged, madeDurable } = this.options;
    return this.io.enqueue(this.owner, { kind: 'batch', ops }, async () => {
      const written = await this.widened(ops);
      await state().batch(written);
      acknowledged(written);
      madeDurable(written);
    });
  }

  /** The batch with the fault `pruneAheadOfCommit`: a prune of a partition's effect records deletes all of them. */
  private async widened(ops: StoreOp[]): Promise<StoreOp[]> {
    if (!this.options.faults?.pruneAheadOfCommit) return ops;
    const prefixes = new Set<string>();
    const putHere = new Set<string>();
    for (const op of ops) {
      // A prune, or a record taking a ring position (which replaces the record there).
      const prunes = op.type === 'del' && op.key.startsWith('effect/');
      const replaces = op.type === 'put' && op.key.startsWith('ring/');
      if (!prunes && !replaces) continue;
      if (replaces) putHere.add(op.key);
      const { store, topic, partition } = stateKeys.parse(op.key);
      prefixes.add(stateKeys.effectPartitionPrefix(store, { topic, partition }));
      prefixes.add(stateKeys.ringPartitionPrefix(store, { topic, partition }));
    }
    if (prefixes.size === 0) return ops;
    const from = this.options.overlay ?? this.options.state();
    const all = [...ops];
    for (const prefix of prefixes) for (const [key] of await from.entries(prefix)) if (!putHere.has(key)) all.push({ type: 'del', key });
    return all;
  }

  private stageSplit(ops: readonly StoreOp[]): StagedBatch {
    const [first, second] = this.split(ops);
    if (!second) return this.stageOne(first);
    const a = this.stageOne(first);
    const b = this.stageOne(second);
    return { landed: Promise.all([a.landed, b.landed]).then(() => undefined), durable: Promise.all([a.durable, b.durable]).then(() => undefined) };
  }

  private stageOne(ops: StoreOp[]): StagedBatch {
    let acked!: Promise<void>;
    const landed = this.io.enqueue(this.owner, { kind: 'batch', ops, staged: true }, async () => {
      const written = await this.widened(ops);
      const seq = this.options.overlay!.land(written);
      // Asked for as the batch lands: acknowledgements come in landing order.
      acked = this.io.enqueue(this.owner, { kind: 'durable', ops: written }, () => this.acknowledge(seq, written), 'acks');
    });
    if (this.options.faults?.durableAtLanding) {
      // The fault drops the acknowledgement: nobody waits for it, so its failure (a refused write) must not go unhandled.
      void landed.then(
        () => acked.catch(() => undefined),
        () => undefined,
      );
      return { landed, durable: landed };
    }
    return { landed, durable: landed.then(() => acked) };
  }

  /** The batch's acknowledgement: durable now, or (exactly-once) in the open transaction. */
  private async acknowledge(seq: number, ops: StoreOp[]): Promise<void> {
    const { overlay, transaction, state, acknowledged, madeDurable } = this.options;
    if (transaction) {
      // Landed before a reset that aborted the transaction: it went down with it.
      if (!overlay!.has(seq)) return;
      transaction.hold(seq);
    } else {
      await state().batch(overlay!.ops(seq));
      overlay!.settle(seq);
      madeDurable(ops);
    }
    acknowledged(ops);
  }
}

/** `ranges` with `offset` added, merged with a neighbour it touches. */
function withOffset(ranges: readonly OffsetRange[], offset: number): OffsetRange[] {
  const merged: OffsetRange[] = [];
  for (const r of [...ranges, { start: offset, end: offset + 1 }].sort((a, b) => a.start - b.start)) {
    const last = merged[merged.length - 1];
    if (last && r.start <= last.end) merged[merged.length - 1] = { start: last.start, end: Math.max(last.end, r.end) };
    else merged.push(r);
  }
  return merged;
}

/** How long a transaction with writes stays open when nothing commits it (Kafka's log: a third of its 10 s timeout). */
const STALE_TRANSACTION_MS = 3_000;

/** What a {@link DriverConsumer} offers and which faults it has. */
export interface ConsumerOptions {
  /** Present for an exactly-once log: records and offsets go in this transaction. */
  readonly transaction?: DriverTransaction;
  /** Exactly-once: the instance's clock, to commit a transaction left open too long. */
  readonly clock?: Clock;
  /** See DriverOptions.faults. */
  readonly commitAheadBy?: number;
  readonly refuseCommits?: number;
  /** See DriverOptions.faults. */
  readonly metadataListsUnfinished?: boolean;
  readonly offsetsOutsideTransaction?: boolean;
  /** Once fenced out of its group, this consumer's producer is not fenced: its transactions still commit their records and state writes. */
  readonly unfencedProducer?: boolean;
  /** Exactly-once: the reset after an aborted transaction keeps the instance's landed writes (its local state is not restored). */
  readonly resetKeepsLocalState?: boolean;
  /** Exactly-once: hears each reset after an aborted transaction, with how many partitions it reset and how many were owned. */
  readonly onReset?: (reset: { readonly partitions: number; readonly owned: number }) => void;
}

/** Where a consumer of the driver's log stands in a partition. */
interface Position {
  readonly tp: TopicPartition;
  offset: number;
  paused: boolean;
  ready: boolean;
  /** Taken away, the engine not told yet (its step waits for the rebalance steps before it): it must not become ready. */
  revoked?: boolean;
  /** Taken away without a revocation (lost): from then on its commits are refused, as KafkaLog refuses them. */
  lost?: boolean;
}

/**
 * The Log port of one engine instance over the driver's in-memory log. It owns every partition of
 * the subscribed topic (one consumer in the group) and starts each at the group's committed offset.
 */
export class DriverConsumer implements Log {
  private listener: LogListener | undefined;
  private readonly positions = new Map<string, Position>();
  private refuseCommits: number;
  /** Fenced out of its group without being told (see TopologyTestDriver.fence). */
  private fencedOut = false;
  /** Exactly-once: commits run one at a time, in the order asked. */
  private committing: Promise<void> = Promise.resolve();
  /** The rebalance steps under way and queued, in turn (see serialize). */
  private rebalances: Promise<void> = Promise.resolve();
  private staleTimer: Timer | undefined;
  /** Exactly-once: resets after an aborted transaction, queued or under way, in turn. */
  private resetting: Promise<void> | undefined;
  /** Exactly-once: resets queued or throwing their transaction away (before its abort): commits are refused, and another cause is covered by them. */
  private discarding = 0;
  /** Present on an exactly-once log; see {@link Log.atomic}. */
  readonly atomic?: <T>(work: () => Promise<T>, partition?: TopicPartition, options?: AtomicOptions) => Promise<T>;

  constructor(
    private readonly owner: string,
    private readonly io: DriverIo,
    private readonly log: MemoryLog,
    private readonly nowMs: () => number,
    private readonly onDelivered: (record: LogRecord) => void,
    private readonly options: ConsumerOptions = {},
  ) {
    this.refuseCommits = options.refuseCommits ?? 0;
    const transaction = options.transaction;
    if (transaction) this.atomic = (work, partition, atomic) => transaction.unit(work, partition && partitionId(partition), atomic?.prunesOnly === true);
  }

  async subscribe(topics: readonly string[], listener: LogListener): Promise<void> {
    this.listener = listener;
    const tps = topics.flatMap((topic) => this.log.partitions(topic).map((_, partition) => ({ topic, partition })));
    for (const tp of tps) this.positions.set(partitionId(tp), { tp, offset: this.log.committed(tp), paused: false, ready: false });
    await this.serialize(() => this.assignEach(tps));
  }

  /**
   * Runs rebalance steps (assignments with their restores, revocations, losses, resets) one after
   * another, in the order they came, as KafkaLog's `serialize` does: a partition revoked while
   * another still restores is let go once that restore has ended.
   */
  private serialize(step: () => Promise<void>): Promise<void> {
    const run = this.rebalances.then(step);
    this.rebalances = run.catch(() => undefined);
    return run;
  }

  /**
   * As KafkaLog does: each partition is handed to the engine on its own, all at once, and its
   * records flow as soon as its own assignment settled (its state restored), while the others'
   * may still be restoring.
   */
  private async assignEach(tps: readonly TopicPartition[]): Promise<void> {
    const listener = this.listener;
    if (!listener) return;
    await Promise.all(
      tps.map(async (tp) => {
        const position = this.positions.get(partitionId(tp));
        await listener.assigned([this.withCommitted(tp)]);
        // Still the same assignment (no reset or revocation replaced it meanwhile).
        if (position && this.positions.get(partitionId(tp)) === position && !position.revoked) position.ready = true;
      }),
    );
  }

  pause(tps: readonly TopicPartition[]): void {
    for (const tp of tps) this.position(tp).paused = true;
  }

  resume(tps: readonly TopicPartition[]): void {
    for (const tp of tps) this.position(tp).paused = false;
  }

  commit(offsets: readonly CommitOffset[]): Promise<void> {
    for (const o of offsets) {
      const polled = this.positions.get(partitionId(o))?.offset;
      if (polled !== undefined && o.offset > polled)
        throw new Error(`commit of ${partitionId(o)} at ${o.offset}, but only offsets below ${polled} were polled`);
    }
    const transaction = this.options.transaction;
    if (transaction) {
      const next = this.committing.then(() => this.commitTransaction(transaction, offsets));
      this.committing = next.catch(() => undefined);
      return next;
    }
    return this.io.enqueue(this.owner, { kind: 'commit', offsets }, async () => this.commitOffsets(offsets));
  }

  /**
   * The open transaction got its first write: as Kafka's log does (`maxOpenMs`), it is committed
   * without offsets if it is still open a while later (no offset moved: a replay, say).
   */
  transactionOpened(): void {
    const clock = this.options.clock;
    if (!clock || this.staleTimer) return;
    this.staleTimer = clock.setTimer(STALE_TRANSACTION_MS, () => {
      this.staleTimer = undefined;
      this.commit([]).catch(() => undefined);
    });
  }

  /** Commits the open transaction with the offsets, once its running units have ended. */
  private async commitTransaction(transaction: DriverTransaction, offsets: readonly CommitOffset[]): Promise<void> {
    if (this.discarding > 0) throw new CommitRefusedError('commit refused: partitions are being reset after an aborted transaction');
    if (offsets.length === 0 && !transaction.holdsWrites) return;
    this.staleTimer?.cancel();
    this.staleTimer = undefined;
    await transaction.drain();
    try {
      // A fault: the offsets go to the group at once, the transaction's records and writes after.
      const outside = this.options.offsetsOutsideTransaction === true && offsets.length > 0;
      if (outside) await this.io.enqueue(this.owner, { kind: 'commit', offsets }, async () => this.commitOffsets(offsets));
      const inside = outside ? [] : offsets;
      await this.io.enqueue(this.owner, { kind: 'commit', offsets: inside, transaction }, async () => {
        // Lost partitions abort the transaction: nothing of it may commit (Kafka: the group's
        // generation moved on, so sendOffsetsToTransaction fails and the transaction aborts).
        if (this.discarding > 0) throw new CommitRefusedError('commit refused: the transaction was aborted, partitions are being reset');
        // A newer instance with the same transactional id fenced this producer: fatal, as on Kafka
        // (unless a fault leaves it unfenced: its records and state writes then commit, its offsets cannot).
        if (this.fencedOut && !this.options.unfencedProducer)
          throw new Error('the transaction cannot commit: a newer instance fenced this producer (a fault of the driver)');
        if (!this.fencedOut) this.commitOffsets(inside);
        await transaction.commit();
      });
    } finally {
      transaction.reopenUnits();
    }
  }

  private commitOffsets(offsets: readonly CommitOffset[]): void {
    if (this.fencedOut && offsets.length > 0) throw new CommitRefusedError('commit refused: this consumer was fenced out of its group (a fault of the driver)');
    // As Kafka would: a partition taken away (or a commit refused on purpose) fails the whole commit.
    const gone = offsets.filter((o) => !this.positions.has(partitionId(o)) || this.positions.get(partitionId(o))!.lost).map((o) => partitionId(o));
    if (gone.length > 0) throw new CommitRefusedError(`commit refused: ${gone.join(', ')} no longer assigned to this consumer`);
    if (this.refuseCommits > 0) {
      this.refuseCommits -= 1;
      throw new CommitRefusedError('commit refused: a rebalance is in progress (a fault of the driver)');
    }
    const ahead = this.options.commitAheadBy ?? 0;
    for (const o of offsets) this.log.commit(o, Math.min(o.offset + ahead, this.position(o).offset), this.metadataOf(o));
  }

  /** The partition with the group's committed offset and metadata, as the log reads them back at assignment. */
  private withCommitted(tp: TopicPartition): AssignedPartition {
    const { offset, metadata } = this.log.committedWithMetadata(tp);
    return { ...tp, committed: metadata === undefined ? { offset } : { offset, metadata } };
  }

  /**
   * The metadata a commit stores. With the fault `metadataListsUnfinished`, it lists one more
   * offset as finished: the first one polled above the committed offset that it does not list,
   * which the engine has not finished (it lists every finished one it can).
   */
  private metadataOf(o: CommitOffset): string | undefined {
    if (!this.options.metadataListsUnfinished) return o.metadata;
    const listed = readOffsetMetadata(o.offset, o.metadata).ranges;
    const polled = this.position(o).offset;
    let unfinished = o.offset + 1;
    for (const r of listed) if (r.start <= unfinished && unfinished < r.end) unfinished = r.end;
    if (unfinished >= polled) return o.metadata;
    return writeOffsetMetadata(o.offset, withOffset(listed, unfinished));
  }

  /**
   * Takes partitions away, as a rebalance does: no more of their records are delivered, then the
   * engine is told (revoked: it may still commit them; lost: it may not), then they are forgotten.
   */
  async revoke(tps: readonly TopicPartition[], lost: boolean): Promise<void> {
    for (const tp of tps) Object.assign(this.position(tp), { ready: false, revoked: true, ...(lost ? { lost: true } : {}) });
    // Exactly-once, as Kafka's log does: the open transaction holds writes of the lost partitions,
    // so it is aborted, and the partitions still owned whose work it held are reset with it.
    if (lost && this.options.transaction) return this.resetAfterAbort(tps);
    await this.serialize(async () => {
      if (this.listener) await (lost ? this.listener.lost(tps) : this.listener.revoked(tps));
      for (const tp of tps) this.positions.delete(partitionId(tp));
    });
  }

  /**
   * After an aborted transaction (partitions lost, or a write the transaction failed under), as
   * `KafkaLog.resetAfterAbort` does: commits are refused, the owned partitions whose work the
   * transaction held (see DriverTransaction.touched) are dropped without a commit (the engine's
   * `lost`) with the lost ones, the transaction is aborted and their landed writes dropped (their
   * local state restored from the durable one), and those not lost are assigned again from their
   * committed offsets. The other partitions go on. Settles once the reset ones are assigned again.
   */
  resetAfterAbort(lost: readonly TopicPartition[] = []): Promise<void> {
    // A reset not past its abort covers any other cause (a unit that wrote in the transaction is
    // dropped with it), but not partitions lost meanwhile: another reset follows that drops them.
    if (this.discarding > 0 && lost.length === 0) return this.resetting!;
    this.discarding += 1;
    let discarding = true;
    const aborted = () => {
      if (discarding) this.discarding -= 1;
      discarding = false;
    };
    const reset: Promise<void> = this.serialize(() => this.reset(lost, aborted)).finally(() => {
      aborted();
      if (this.resetting === reset) this.resetting = undefined;
    });
    this.resetting = reset;
    return reset;
  }

  private async reset(lost: readonly TopicPartition[], aborted: () => void): Promise<void> {
    const transaction = this.options.transaction!;
    this.staleTimer?.cancel();
    this.staleTimer = undefined;
    const gone = new Set(lost.map(partitionId));
    const owned = [...this.positions.values()].filter((p) => !gone.has(partitionId(p.tp))).length;
    const dropped: Position[] = [];
    // A commit under way ends first (refused: it sees the reset); the units it drained run again.
    await this.committing;
    const partitions = await transaction.discard(async (touched) => {
      const more = [...this.positions.values()].filter(
        (p) => !dropped.includes(p) && (touched === 'all' || touched.has(partitionId(p.tp)) || gone.has(partitionId(p.tp))),
      );
      for (const p of more) p.ready = false;
      dropped.push(...more);
      if (this.listener && more.length > 0) await this.listener.lost(more.map((p) => p.tp));
    }, gone);
    transaction.abort({
      keepLocalState: this.options.resetKeepsLocalState === true,
      partitions: partitions === 'all' ? 'all' : new Set([...partitions, ...dropped.map((p) => partitionId(p.tp))]),
    });
    transaction.endDiscard();
    aborted();
    for (const p of dropped) this.positions.delete(partitionId(p.tp));
    // Not taken back: the lost ones, and those revoked meanwhile (their revocation queued behind
    // this reset), which were dropped as lost, as KafkaLog drops them.
    const kept = dropped.filter((p) => !gone.has(partitionId(p.tp)) && !p.revoked);
    this.options.onReset?.({ partitions: kept.length, owned });
    // A worker fenced out of its group takes nothing back; nor does a closed one.
    if (this.fencedOut || !this.listener || kept.length === 0) return;
    for (const p of kept) this.positions.set(partitionId(p.tp), { tp: p.tp, offset: this.log.committed(p.tp), paused: false, ready: false });
    await this.assignEach(kept.map((p) => p.tp));
  }

  /**
   * Fences this consumer out of its group without telling its engine (it was frozen past its
   * session timeout): it receives no more records and its commits are refused; exactly-once, its
   * producer is fenced too. Its work in flight goes on until {@link loseAll}.
   */
  fenceOut(): void {
    this.fencedOut = true;
  }

  /** Whether the engine has restored a partition it was assigned (its assignment settled). */
  ready(partition: number): boolean {
    return [...this.positions.values()].some((p) => p.tp.partition === partition && p.ready);
  }

  /** The partitions this consumer holds now, in the order they were assigned. */
  assigned(): TopicPartition[] {
    return [...this.positions.values()].map((p) => p.tp);
  }

  /** Tells the engine that every partition it owned is lost (a fenced worker hears it when it thaws). */
  async loseAll(): Promise<void> {
    await this.revoke(
      [...this.positions.values()].map((p) => p.tp),
      true,
    );
  }

  /** Assigns partitions again, from the group's committed offsets. */
  async assign(tps: readonly TopicPartition[]): Promise<void> {
    for (const tp of tps) {
      if (this.positions.has(partitionId(tp))) throw new Error(`${partitionId(tp)} is assigned to this consumer already`);
      this.positions.set(partitionId(tp), { tp, offset: this.log.committed(tp), paused: false, ready: false });
    }
    await this.serialize(() => this.assignEach(tps));
  }

  produce(records: readonly OutRecord[]): Promise<void> {
    const transaction = this.options.transaction;
    return this.io.enqueue(this.owner, { kind: 'produce', records }, async () => {
      if (transaction) transaction.send(records);
      else for (const r of records) this.log.append(r, this.nowMs());
    });
  }

  highWatermark(tp: TopicPartition): number {
    return this.log.endOffset(tp);
  }

  async close(): Promise<void> {
    this.listener = undefined;
  }

  /** Delivers up to `max` records of each partition that has some; returns how many it delivered. */
  poll(max: number): number {
    if (!this.listener || this.fencedOut) return 0;
    let delivered = 0;
    for (const position of this.positions.values()) {
      if (!position.ready || position.paused) continue;
      const batch = this.log.read(position.tp, position.offset, max);
      if (batch.length === 0) continue;
      position.offset += batch.length;
      for (const r of batch) this.onDelivered(r);
      this.listener.records(batch);
      delivered += batch.length;
    }
    return delivered;
  }

  private position(tp: TopicPartition): Position {
    const position = this.positions.get(partitionId(tp));
    if (!position) throw new Error(`${partitionId(tp)} is not assigned to this consumer`);
    return position;
  }
}
