import rdkafka, {
  type Assignment,
  type LibrdKafkaError,
  type Message,
  type TopicPartitionOffset,
  type TopicPartitionOffsetAndMetadata,
} from '@confluentinc/kafka-javascript';
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CommitRefusedError,
  isCommitRefused,
  PartitionResetError,
  partitionId,
  type AssignedPartition,
  type AtomicOptions,
  type CommitOffset,
  type Log,
  type LogListener,
  type OutRecord,
  type TopicPartition,
} from '../../ports/log.js';
import { AckedProducer } from './ackedProducer.js';
import { AssignmentWait } from './assignmentWait.js';
import { CommitWaiter, isMetadataTooLarge, isRefusedByRebalance, isRetriableCommitError, offsetIds } from './commitWaiter.js';
import { consumerConfig, type KafkaSettings, type TransactionSettings } from '../kafkaConfig.js';
import { logClientTo } from './kafkaLogger.js';
import { transition, type Ownership } from './partitionOwnership.js';
import { toLogRecord } from './records.js';
import { TransactionAbortedError, Transactions } from './transactions.js';

const ERR_ASSIGN_PARTITIONS = -175;
const OFFSET_BEGINNING = -2;
const OFFSET_END = -1;
const ERR_REVOKE_PARTITIONS = -174;
/** The group coordinator refused the consumer's session.timeout.ms: no retry heals it. */
const ERR_INVALID_SESSION_TIMEOUT = 26;
/** How long reading the committed offsets back at assignment may take. */
const COMMITTED_TIMEOUT_MS = 10_000;

/** The group's committed offsets (and their metadata) of these partitions. */
function fetchCommitted(consumer: rdkafka.KafkaConsumer, tps: readonly TopicPartition[], timeoutMs: number): Promise<TopicPartitionOffsetAndMetadata[]> {
  return new Promise((resolve, reject) =>
    consumer.committed(
      tps.map(({ topic, partition }) => ({ topic, partition })),
      timeoutMs,
      (error, offsets) => (error ? reject(error) : resolve(offsets)),
    ),
  );
}

/** The partitions, each with its committed offset and metadata when it has one. */
function withCommitted(tps: readonly TopicPartition[], committed: readonly TopicPartitionOffsetAndMetadata[]): AssignedPartition[] {
  const byId = new Map(committed.map((c) => [partitionId(c), c]));
  return tps.map((tp) => {
    const c = byId.get(partitionId(tp));
    if (c?.offset === undefined || c.offset < 0) return { ...tp };
    return { ...tp, committed: c.metadata ? { offset: c.offset, metadata: c.metadata } : { offset: c.offset } };
  });
}

/** The consumer methods orderly uses that the library's typings leave out. */
interface Consumer extends rdkafka.KafkaConsumer {
  incrementalAssign(assignments: Assignment[]): void;
  incrementalUnassign(assignments: Assignment[]): void;
  assignmentLost(): boolean;
  rebalanceProtocol(): 'COOPERATIVE' | 'EAGER' | 'NONE';
  setDefaultIsTimeoutOnlyForFirstMessage(value: boolean): void;
}

interface PartitionState {
  readonly tp: TopicPartition;
  /** Where this consumer stands with the partition; changed only by {@link moveTo}, which checks the move. */
  ownership: Ownership;
  /** What the engine asked for: while set, its records are held here, not handed to the engine. */
  paused: boolean;
  /**
   * Records consumed but not yet handed to the engine, oldest first: those that came while the
   * engine had the partition paused (see {@link KafkaLog.pause}).
   */
  held: Message[];
  /** Whether librdkafka has the partition paused (its held records reached the bound). */
  fetchPaused: boolean;
  /**
   * Exactly-once: an offset of this partition that may always be committed again (the last one
   * committed, or the first delivered since assignment), so that every transaction carries offsets.
   */
  position?: number;
  /** Exactly-once: the metadata committed with `position`, sent with it again so that a transaction keeps it. */
  metadata?: string;
  /** The committed offset and metadata read back at assignment: `metadata` while `position` is that offset. */
  readBack?: { readonly offset: number; readonly metadata?: string };
}

export interface KafkaLogOptions {
  readonly settings: KafkaSettings;
  readonly logger: Logger;
  /** Most records one poll returns. @defaultValue 500 */
  readonly maxPollRecords?: number;
  /** How long one poll waits for its first record. @defaultValue 100 */
  readonly pollTimeoutMs?: number;
  /**
   * Records of a partition the engine has paused that are held, not handed on, before librdkafka
   * pauses the partition too (see {@link KafkaLog.pause}). @defaultValue 1500
   */
  readonly maxHeldPerPartition?: number;
  /** How long a commit is retried on a retriable error (coordinator moving, rebalance in progress). @defaultValue 60000 */
  readonly commitRetryMs?: number;
  /**
   * Exactly-once: outputs, changelog records and input offsets in one transaction per commit
   * (see {@link Transactions}). Unset: at-least-once.
   */
  readonly exactlyOnce?: TransactionSettings & {
    /** The longest a transaction with records stays open while no offset moves. @defaultValue a third of `timeoutMs` */
    readonly maxOpenMs?: number;
  };
}

/** A rebalance step running longer than this is logged (see KafkaLog's `serialize`). */
const SLOW_REBALANCE_STEP_MS = 10_000;
const REVOCATION_WAITS_FOR =
  "the engine to end the partitions' events in flight (their model calls are aborted; an event whose effect is being recorded waits for Kafka to acknowledge its writes)";
const ASSIGNMENT_WAITS_FOR = "the partitions' committed offsets and the restore of their state from the changelogs";
/** What a reset waits for, by its phase: the warning names the one it is in. */
const RESET_WAITS_FOR = {
  dropping: "the partitions' events in flight to end (then their committed offsets and the restore of their state)",
  aborting: 'Kafka to abort the transaction (then the committed offsets and the restore of the partitions)',
  rewinding: "the partitions' committed offsets from the group coordinator, and the seeks to them (then the restore of their state)",
  restoring: "the restore of the partitions' state from the changelogs",
} as const;

/**
 * The Log port over @confluentinc/kafka-javascript (librdkafka).
 *
 * - The consume loop is its own: it polls librdkafka and hands each batch to the engine
 *   synchronously, whatever the engine is doing, so a slow model never delays a poll and the
 *   worker never passes `max.poll.interval.ms`.
 * - Rebalances are incremental (cooperative-sticky, or KIP-848): the engine's `assigned` settles
 *   before a partition is assigned in librdkafka (so no record comes before it), and its `revoked`
 *   (finish, commit) settles before a partition is given up.
 * - `commit` commits exactly the offsets the engine gives and settles when the broker has them.
 * - `produce` settles when every record is acknowledged by all in-sync replicas (idempotent producer).
 * - With `exactlyOnce`, records and offsets go in transactions (`commit` commits one) and the log
 *   offers `atomic`; a failed transaction, or partitions lost without a revocation, is fatal: the
 *   worker's local state holds what the transaction held, and must be rebuilt by a restart.
 */
export class KafkaLog implements Log {
  private consumer: Consumer | undefined;
  private producer: AckedProducer | undefined;
  private transactions: Transactions | undefined;
  /** Present with exactly-once only; see {@link Log.atomic}. */
  readonly atomic?: <T>(work: () => Promise<T>, partition?: TopicPartition, options?: AtomicOptions) => Promise<T>;
  private listener: LogListener | undefined;
  private readonly partitions = new Map<string, PartitionState>();
  private rebalances: Promise<void> = Promise.resolve();
  private readonly commits = new CommitWaiter();
  private loop: Promise<void> | undefined;
  private closing = false;
  private handOverScheduled = false;
  /**
   * Exactly-once: resets after an aborted transaction, queued or throwing their transaction away
   * (until its abort is done; commits are refused meanwhile).
   */
  private resetting = 0;
  /** Exactly-once: the lost partitions of a reset queued but not yet begun (later causes join it). */
  private queuedReset: TopicPartition[] | undefined;
  private fatal: Error | undefined;
  private readonly logger: Logger;
  /** Logs why no partition came yet, until the first assignment. */
  private assignmentWait: AssignmentWait | undefined;

  constructor(private readonly options: KafkaLogOptions) {
    this.logger = options.logger;
    if (options.exactlyOnce)
      this.atomic = (work, partition, atomic) => this.requireTransactions().unit(work, partition && partitionId(partition), atomic?.prunesOnly === true);
  }

  async subscribe(topics: readonly string[], listener: LogListener): Promise<void> {
    if (this.consumer) throw new Error('KafkaLog: subscribe() was called twice; one KafkaLog serves one engine');
    const { settings } = this.options;
    this.listener = listener;
    const eos = this.options.exactlyOnce;
    this.producer = await AckedProducer.connect(settings, this.logger.child({ client: 'producer' }), (error) => this.fail(error), eos);
    const consumer = new rdkafka.KafkaConsumer(
      {
        ...consumerConfig(settings),
        rebalance_cb: (error: LibrdKafkaError, assignment: Assignment[]) => this.onRebalance(error, assignment),
        offset_commit_cb: (error: LibrdKafkaError | undefined, offsets: TopicPartitionOffset[]) => this.commits.settled(error, offsets),
      },
      // No topic config object: with one (even empty) the binding ignores the topic-level
      // properties of the global config, auto.offset.reset among them.
      undefined,
    ) as Consumer;
    logClientTo(consumer, this.logger.child({ client: 'consumer' }), (error) => this.fail(error));
    await new Promise<void>((resolve, reject) => {
      consumer.connect({}, (error) => (error ? reject(new Error(`Kafka consumer could not connect to ${settings.bootstrap}: ${error.message}`)) : resolve()));
    });
    consumer.setDefaultConsumeTimeout(this.options.pollTimeoutMs ?? 100);
    consumer.setDefaultIsTimeoutOnlyForFirstMessage(true);
    this.consumer = consumer;
    if (eos) {
      this.transactions = await Transactions.begin(
        this.producer,
        () => this.requireConsumer('sendOffsetsToTransaction'),
        this.logger.child({ client: 'transactions' }),
        { callTimeoutMs: eos.timeoutMs, maxOpenMs: eos.maxOpenMs ?? Math.floor(eos.timeoutMs / 3) },
        () => void this.commit([]).catch((error: unknown) => (isCommitRefused(error) ? undefined : this.fail(error as Error))),
      );
    }
    consumer.subscribe([...topics]);
    this.logger.info({ topics, group: settings.group, protocol: settings.groupProtocol ?? 'classic' }, 'subscribed');
    this.assignmentWait = new AssignmentWait(settings, this.logger);
    this.assignmentWait.start();
    this.loop = this.consumeLoop();
  }

  /**
   * Hands no more records of these partitions to the engine. librdkafka is not paused at once: a
   * pause throws away what it read ahead for the partition, and after the resume the partition
   * waits for a new fetch (measured in docs/benchmarks.md, "The engine's pause"). Records that
   * come meanwhile are held here, in order, and librdkafka pauses the partition only once
   * `maxHeldPerPartition` of them are held.
   */
  pause(partitions: readonly TopicPartition[]): void {
    for (const tp of partitions) {
      const state = this.partitions.get(partitionId(tp));
      if (state) state.paused = true;
    }
  }

  /**
   * Hands these partitions' records to the engine again, the held ones first, and has librdkafka
   * fetch them again once fewer than `maxHeldPerPartition` are held (see {@link KafkaLog.pause}).
   */
  resume(partitions: readonly TopicPartition[]): void {
    for (const tp of partitions) {
      const state = this.partitions.get(partitionId(tp));
      if (!state) continue;
      state.paused = false;
      if (state.held.length > 0 || state.fetchPaused) this.scheduleHandOver();
    }
  }

  async commit(offsets: readonly CommitOffset[]): Promise<void> {
    const consumer = this.requireConsumer('commit');
    const deadline = Date.now() + (this.options.commitRetryMs ?? 60_000);
    for (let attempt = 1; ; attempt += 1) {
      // Offsets of a lost partition cannot be committed (another worker may own it): skip them.
      const live = offsets.filter((o) => {
        const ownership = this.partitions.get(partitionId(o))?.ownership;
        return ownership !== undefined && ownership !== 'lost';
      });
      if (this.transactions) {
        await this.commitTransaction(live);
        return this.refuseSkipped(offsets, live);
      }
      try {
        if (live.length > 0) {
          await this.commits.commit(consumer, live);
          this.logger.debug({ offsets: offsetIds(live) }, 'committed');
        }
      } catch (error) {
        const what = offsetIds(live).join(', ');
        if (isRefusedByRebalance(error)) {
          this.logger.warn({ offsets: what, error: (error as Error).message }, 'commit refused: a rebalance took these partitions');
          throw new CommitRefusedError(`Kafka commit of ${what} refused by a rebalance: ${(error as Error).message}`, { cause: error });
        }
        if (isMetadataTooLarge(error)) {
          throw new Error(
            `Kafka commit of ${what} failed: its metadata (the finished offsets above each committed one, up to commitMetadataMaxBytes) is longer than the broker's offset.metadata.max.bytes; set runTopology's commitMetadataMaxBytes below that limit (0: commit offsets alone)`,
            { cause: error },
          );
        }
        if (!isRetriableCommitError(error) || Date.now() >= deadline) {
          throw new Error(`Kafka commit of ${what} failed: ${(error as Error).message}`, {
            cause: error,
          });
        }
        this.logger.warn({ attempt, error: (error as Error).message }, 'commit failed; retrying');
        await sleep(Math.min(100 * 2 ** attempt, 2_000));
        continue;
      }
      return this.refuseSkipped(offsets, live);
    }
  }

  /**
   * After the offsets still owned were committed: the others (of partitions lost meanwhile) were
   * not, and the engine must not count them as committed, so the commit is refused for them.
   */
  private refuseSkipped(offsets: readonly CommitOffset[], live: readonly CommitOffset[]): void {
    if (live.length === offsets.length) return;
    const skipped = offsetIds(offsets.filter((o) => !live.includes(o)));
    this.logger.warn({ skipped }, 'not committing offsets of partitions this worker no longer owns');
    throw new CommitRefusedError(`Kafka commit of ${skipped.join(', ')} refused: this worker lost these partitions in a rebalance`);
  }

  async produce(records: readonly OutRecord[]): Promise<void> {
    if (this.fatal) throw this.fatal;
    if (!this.transactions) return this.requireProducer().produce(records);
    try {
      await this.transactions.produce(records);
    } catch (error) {
      // The transaction failed under this write (fenced out of the group, or aborted by the
      // broker): the partitions are reset, and this event runs again after that.
      if (this.fatal) throw error;
      this.resetAfterAbort(error as Error);
      throw new PartitionResetError(`the Kafka transaction failed under this write, so its partitions are reset: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  /**
   * Stops delivering records, leaves the group (librdkafka's close revokes every partition; the
   * engine is no longer asked, it finished and committed before it closed the log) and flushes
   * the producer.
   */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    this.assignmentWait?.stop();
    this.listener = undefined;
    await this.loop;
    await this.rebalances;
    const consumer = this.consumer;
    if (consumer) {
      await new Promise<void>((resolve) =>
        consumer.disconnect((error: unknown) => {
          if (error) this.logger.warn({ error: String(error) }, 'consumer close');
          resolve();
        }),
      );
    }
    this.commits.abandon(new Error('KafkaLog closed'));
    await this.transactions?.close();
    await this.producer?.close();
    this.logger.info('left the group and closed');
  }

  /** True while a partition taken away without a revocation (this worker was fenced) is being let go. */
  isLost(tp: TopicPartition): boolean {
    return this.partitions.get(partitionId(tp))?.ownership === 'lost';
  }

  /**
   * Exactly-once: commits the open transaction with these offsets. An aborted transaction (the
   * group moved to a new generation while it was open, say) is a refused commit, not a fatal one:
   * the partitions whose work it held are reset, see {@link KafkaLog.resetAfterAbort}.
   */
  private async commitTransaction(offsets: readonly CommitOffset[]): Promise<void> {
    if (this.resetting > 0) throw new CommitRefusedError('commit refused: the partitions are being reset after an aborted transaction');
    // Every transaction carries offsets, moved or not: sending them is what checks that this
    // worker is still a member of the group's current generation (KIP-447), so a worker that was
    // fenced out while its records were in flight cannot commit them.
    const given = new Set(offsets.map(partitionId));
    const all = [...offsets];
    for (const state of this.partitions.values()) {
      if (state.ownership === 'owned' && state.position !== undefined && !given.has(partitionId(state.tp)))
        all.push({ ...state.tp, offset: state.position, ...(state.metadata ? { metadata: state.metadata } : {}) });
    }
    // Nothing delivered yet, so nothing of this worker's partitions can be in the transaction.
    if (all.length === 0) return;
    try {
      await this.transactions!.commit(all);
      for (const o of all) {
        const state = this.partitions.get(partitionId(o));
        if (state) Object.assign(state, { position: o.offset, metadata: o.metadata });
      }
    } catch (error) {
      if (!(error instanceof TransactionAbortedError)) throw error;
      this.resetAfterAbort(error);
      throw new CommitRefusedError(`Kafka transaction aborted: ${error.message}`, { cause: error });
    }
  }

  /**
   * After an aborted transaction the local state holds writes the broker threw away, and the
   * engine counts as finished events whose outputs are gone, but only for the partitions whose
   * work the transaction held: those whose units ({@link Log.atomic}) entered it. Those, and no
   * others, are dropped without a commit (the engine's `lost`), whatever they produced meanwhile
   * is aborted too, each is rewound to its committed offset and assigned to the engine again,
   * which restores its state from the committed changelog. The other partitions go on: their
   * units wait while the transaction is thrown away and then write into the next one, so none of
   * their work was in it (docs/delivery.md).
   *
   * `lost` partitions (taken away without a revocation) are dropped in the same step, before the
   * abort: their work in flight may still be recording an effect, and what it produces must go
   * down with the aborted transaction, never into the next one, which this worker commits once it
   * has rejoined the group. A reset whose abort is done when partitions are lost (it may have
   * assigned them to the engine again) does not cover them, so another is queued; any other cause
   * that comes while a reset is queued or throwing its transaction away is covered by it (a unit
   * that entered the transaction is dropped with it).
   */
  private resetAfterAbort(cause: Error, lost: readonly TopicPartition[] = []): void {
    if (this.queuedReset) {
      this.queuedReset.push(...lost);
      return;
    }
    if (this.resetting > 0 && lost.length === 0) return;
    this.logger.warn({ err: cause }, 'transaction aborted: resetting the partitions whose work it held to their committed offsets and state');
    const queued = [...lost];
    this.queuedReset = queued;
    this.resetting += 1;
    const step = `reset of ${queued.length > 0 ? queued.map(partitionId).join(', ') : 'the partitions the aborted transaction touched'}`;
    let phase: keyof typeof RESET_WAITS_FOR = 'dropping';
    const waitsFor = () => RESET_WAITS_FOR[phase];
    this.serialize(step, waitsFor, async () => {
      this.queuedReset = undefined;
      const states: PartitionState[] = [];
      const owned = [...this.partitions.values()].filter((p) => p.ownership === 'owned').length;
      const lost = new Set(queued.map(partitionId));
      try {
        const consumer = this.requireConsumer('reset');
        let lostToo: readonly TopicPartition[] = queued;
        // Their work in flight ends (or is given up) first; what it produced goes with the abort.
        await this.transactions!.discard(async (touched) => {
          phase = 'dropping';
          const touches = (p: PartitionState) => touched === 'all' || touched.has(partitionId(p.tp));
          const dropped = [...this.partitions.values()].filter((p) => p.ownership === 'owned' && touches(p));
          // Revoked while this reset waited, their revocation queued behind it: handed over as a
          // revocation, the engine would commit events whose outputs and state the abort throws
          // away. Lost instead, now: dropped without a commit, and not taken back.
          const revoking = [...this.partitions.values()].filter((p) => p.ownership === 'revoking' && touches(p));
          for (const state of revoking) moveTo(state, 'lost', 'revoked while an aborted transaction held its work');
          // New tasks start unpaused; what the dropped ones asked for no longer holds.
          for (const state of dropped) {
            moveTo(state, 'assigning', 'reset after an aborted transaction');
            state.paused = false;
            // Records of the old life: the partition is read again from its committed offset.
            state.held = [];
            state.fetchPaused = true;
            delete state.position;
            delete state.metadata;
            delete state.readBack;
          }
          const tps = dropped.map((p) => p.tp);
          if (tps.length > 0) consumer.pause(tps);
          states.push(...dropped);
          const drop = [...lostToo, ...tps, ...revoking.map((p) => p.tp)];
          lostToo = [];
          if (drop.length > 0) await this.listener?.lost(drop);
          phase = 'aborting';
        }, lost);
      } finally {
        this.resetting -= 1;
      }
      const tps = states.map((p) => p.tp);
      // A worker that is stopping (or failed) takes nothing back.
      if (tps.length === 0 || !this.listener || this.closing || this.fatal) return;
      const consumer = this.requireConsumer('reset');
      phase = 'rewinding';
      const assigned = withCommitted(tps, await this.rewind(consumer, tps));
      phase = 'restoring';
      this.noteReadBack(assigned);
      const listener = this.listener;
      // Each partition runs again as soon as its own state is back.
      await Promise.all(
        assigned.map(async (partition, i) => {
          await listener.assigned([partition]);
          const state = states[i]!;
          ownRestored([state], 'restored again after a reset');
          if (state.ownership === 'owned' && !this.closing) state.fetchPaused = !this.setFetching([state.tp], true);
        }),
      );
      this.logger.info({ partitions: tps.map(partitionId), owned }, `partitions reset after an aborted transaction: ${tps.length} of the ${owned} owned`);
    });
  }

  /** Seeks each partition to its committed offset (none: where auto.offset.reset says); returns what was committed. */
  private async rewind(consumer: Consumer, tps: readonly TopicPartition[]): Promise<TopicPartitionOffsetAndMetadata[]> {
    const timeoutMs = 30_000;
    const committed = await fetchCommitted(consumer, tps, timeoutMs);
    // The consumer's own setting, wherever it came from (kafka.autoOffsetReset, or a librdkafka property).
    const reset = String((consumerConfig(this.options.settings) as Record<string, unknown>)['auto.offset.reset'] ?? 'earliest');
    const fallback = ['latest', 'largest', 'end'].includes(reset) ? OFFSET_END : OFFSET_BEGINNING;
    for (const { topic, partition, offset } of committed) {
      const to = offset !== undefined && offset >= 0 ? offset : fallback;
      await new Promise<void>((resolve, reject) => consumer.seek({ topic, partition, offset: to }, timeoutMs, (error) => (error ? reject(error) : resolve())));
    }
    return committed;
  }

  /** Keeps what was read back, so that a transaction that carries a partition's first offset keeps its metadata too. */
  private noteReadBack(assigned: readonly AssignedPartition[]): void {
    for (const { committed, ...tp } of assigned) {
      const state = this.partitions.get(partitionId(tp));
      if (state && committed) state.readBack = committed;
    }
  }

  /**
   * The partitions with their committed offsets and metadata, read back for the engine (it skips
   * the finished offsets the metadata lists). Without them (the read failed) the engine runs every
   * redelivered offset, as before: slower after a crash, never wrong.
   */
  private async committedOf(consumer: Consumer, tps: readonly TopicPartition[]): Promise<AssignedPartition[]> {
    try {
      return withCommitted(tps, await fetchCommitted(consumer, tps, COMMITTED_TIMEOUT_MS));
    } catch (error) {
      this.logger.warn(
        { partitions: tps.map(partitionId), error: (error as Error).message },
        'could not read the committed offsets back: finished offsets above them will run again',
      );
      return [...tps];
    }
  }

  /**
   * The high watermark librdkafka cached from its last fetch of the partition (no request to the
   * broker), or undefined before the first fetch.
   */
  highWatermark(tp: TopicPartition): number | undefined {
    try {
      const high = this.consumer?.getWatermarkOffsets(tp.topic, tp.partition).highOffset;
      // librdkafka reports an invalid offset (negative) until it has fetched the partition.
      return high !== undefined && high >= 0 ? high : undefined;
    } catch {
      // It throws when nothing is cached yet.
      return undefined;
    }
  }

  /** Partitions this consumer owns now (assigned and restored), for tests and metrics. */
  owned(): TopicPartition[] {
    return [...this.partitions.values()].filter((p) => p.ownership === 'owned').map((p) => p.tp);
  }

  private async consumeLoop(): Promise<void> {
    const consumer = this.requireConsumer('poll');
    const max = this.options.maxPollRecords ?? 500;
    while (!this.closing && !this.fatal) {
      let messages: Message[];
      try {
        messages = await new Promise<Message[]>((resolve, reject) => consumer.consume(max, (error, batch) => (error ? reject(error) : resolve(batch))));
      } catch (error) {
        if (this.closing) break;
        const e = error as LibrdKafkaError;
        if (e.isFatal) {
          this.fail(new Error(`Kafka consumer failed: ${e.message} (code ${e.code})`));
          break;
        }
        if (e.code === ERR_INVALID_SESSION_TIMEOUT) {
          this.fail(sessionTimeoutRefused(this.options.settings, e));
          break;
        }
        this.logger.warn({ code: e.code }, `poll: ${e.message}`);
        await sleep(200);
        continue;
      }
      try {
        this.deliver(messages);
      } catch (error) {
        this.fail(error as Error);
      }
    }
  }

  /**
   * Hands the records of owned partitions to the engine, in one synchronous call; those of a
   * partition the engine has paused, or that still has records held, are held (see {@link KafkaLog.pause}).
   */
  private deliver(messages: readonly Message[]): void {
    const listener = this.listener;
    if (!listener || messages.length === 0) return;
    const records = [];
    let dropped = 0;
    for (const message of messages) {
      const state = this.partitions.get(partitionId(message));
      if (state?.ownership !== 'owned') {
        dropped += 1;
        continue;
      }
      if (state.paused || state.held.length > 0) this.hold(state, message);
      else records.push(handOver(state, message));
    }
    if (dropped > 0) this.logger.debug({ dropped }, 'dropped records of partitions being revoked');
    if (records.length > 0) listener.records(records);
  }

  private hold(state: PartitionState, message: Message): void {
    state.held.push(message);
    if (!state.fetchPaused && state.held.length >= this.maxHeld) state.fetchPaused = this.setFetching([state.tp], false);
  }

  private get maxHeld(): number {
    return this.options.maxHeldPerPartition ?? 1_500;
  }

  private scheduleHandOver(): void {
    if (this.handOverScheduled) return;
    this.handOverScheduled = true;
    // After the engine's current step: resume() is called from inside it.
    queueMicrotask(() => {
      this.handOverScheduled = false;
      try {
        this.handOverHeld();
      } catch (error) {
        this.fail(error as Error);
      }
    });
  }

  /**
   * Hands the held records of the partitions the engine has resumed, a poll's worth at a time
   * until it pauses one again, and resumes librdkafka's fetching of those with room left to hold
   * (not before: what it fetched would be thrown away by the next pause).
   */
  private handOverHeld(): void {
    const listener = this.listener;
    if (!listener || this.closing || this.fatal) return;
    const max = this.options.maxPollRecords ?? 500;
    for (const state of this.partitions.values()) {
      while (state.ownership === 'owned' && !state.paused && state.held.length > 0) {
        const chunk = state.held.splice(0, max);
        listener.records(chunk.map((message) => handOver(state, message)));
      }
      if (state.ownership === 'owned' && !state.paused && state.fetchPaused && state.held.length < this.maxHeld) {
        state.fetchPaused = !this.setFetching([state.tp], true);
      }
    }
  }

  private onRebalance(error: LibrdKafkaError, assignment: Assignment[]): void {
    const consumer = this.consumer;
    if (!consumer) return;
    const tps = assignment.map(({ topic, partition }) => ({ topic, partition }));
    const cooperative = consumer.rebalanceProtocol() !== 'EAGER';
    // Closing: the engine has stopped and takes no partition; librdkafka may still rebalance
    // while it leaves the group (a rejoin under way, the revocation at close).
    if (this.closing) return this.answerWhileClosing(consumer, error, assignment, cooperative);
    if (error?.code === ERR_ASSIGN_PARTITIONS) {
      this.assignmentWait?.stop();
      // An empty assignment completes a rebalance that gave this worker nothing new.
      if (tps.length > 0) this.logger.info({ partitions: tps.map(partitionId) }, 'assigned');
      this.serialize(`assignment of ${tps.map(partitionId).join(', ') || 'no partition'}`, ASSIGNMENT_WAITS_FOR, async () => {
        const states = tps.map((tp): PartitionState => ({ tp, ownership: 'assigning', paused: false, held: [], fetchPaused: false }));
        for (const state of states) this.partitions.set(partitionId(state.tp), state);
        // librdkafka keeps a partition's pause across its revocation (only a resume clears it): one
        // this worker paused before the partition was revoked, lost or reset would never fetch again.
        if (tps.length > 0) this.setFetching(tps, true);
        const listener = this.listener;
        if (!listener || tps.length === 0) {
          if (cooperative) consumer.incrementalAssign(assignment);
          else consumer.assign(assignment);
          return;
        }
        const assigned = await this.committedOf(consumer, tps);
        this.noteReadBack(assigned);
        // KIP-848 (group protocol 'consumer'): assigned whole, as before; no broker test covers
        // an assignment applied partition by partition under it yet.
        if (!cooperative || this.options.settings.groupProtocol === 'consumer') {
          await listener.assigned(assigned);
          ownRestored(states, 'restored by the engine');
          if (cooperative) consumer.incrementalAssign(assignment);
          else consumer.assign(assignment);
          return;
        }
        // Each partition is restored on its own and incrementally assigned in librdkafka as soon as
        // its state is back: its records flow while the others still restore (a rebalance that comes meanwhile
        // is handled once every one of them is assigned, as the steps run in turn).
        await Promise.all(
          assigned.map(async (partition, i) => {
            await listener.assigned([partition]);
            ownRestored([states[i]!], 'restored by the engine');
            consumer.incrementalAssign([assignment[i]!]);
          }),
        );
      });
    } else if (error?.code === ERR_REVOKE_PARTITIONS) {
      const lost = consumer.assignmentLost();
      // At once, not in turn: from now on no record of these partitions reaches the engine.
      const states = tps.flatMap((tp) => this.partitions.get(partitionId(tp)) ?? []);
      for (const state of states) {
        const to = lost ? 'lost' : 'revoking';
        // A partition named again in the same kind of callback changes nothing.
        if (state.ownership !== to) moveTo(state, to, lost ? 'lost in a rebalance (this worker was fenced)' : 'revoked by the group');
      }
      // Exactly-once: the open transaction holds writes of the lost partitions, which another
      // worker now owns: it is thrown away, and the partitions still owned are reset with it.
      if (lost && this.transactions && states.length > 0)
        this.resetAfterAbort(new Error(`partitions ${tps.map(partitionId).join(', ')} were lost: this worker was fenced out of its group`), tps);
      this.logger.info({ partitions: tps.map(partitionId), lost }, lost ? 'partitions lost' : 'revoking');
      this.serialize(`${lost ? 'loss' : 'revocation'} of ${tps.map(partitionId).join(', ')}`, REVOCATION_WAITS_FOR, async () => {
        try {
          if (this.listener) await (lost ? this.listener.lost(tps) : this.listener.revoked(tps));
        } finally {
          // Answered even when the listener failed (the log fails with its error): librdkafka
          // holds the group's rebalance, and this consumer's close, until the partitions are
          // given back, and their next owner starts from the last committed offsets.
          for (const tp of tps) {
            const id = partitionId(tp);
            const state = this.partitions.get(id);
            if (state && (state.ownership === 'revoking' || state.ownership === 'lost')) this.partitions.delete(id);
          }
          if (cooperative) consumer.incrementalUnassign(assignment);
          else consumer.unassign();
          this.logger.info({ partitions: tps.map(partitionId) }, 'revoked');
        }
      });
    } else {
      this.logger.error({ code: error?.code }, `rebalance error: ${error?.message}`);
    }
  }

  /**
   * A rebalance while the log closes: librdkafka is answered at once (an assignment taken and
   * given straight back is never seen by the engine), and a consumer already disconnected, which
   * refuses the call, is no failure: it has left the group.
   */
  private answerWhileClosing(consumer: Consumer, error: LibrdKafkaError, assignment: Assignment[], cooperative: boolean): void {
    try {
      if (error?.code === ERR_ASSIGN_PARTITIONS) {
        if (cooperative) consumer.incrementalAssign(assignment);
        else consumer.assign(assignment);
      } else if (cooperative) consumer.incrementalUnassign(assignment);
      else consumer.unassign();
    } catch (refused) {
      this.logger.debug({ error: (refused as Error).message }, 'rebalance while closing');
    }
  }

  /**
   * Runs rebalance steps one after another, in the order librdkafka gave them. A step still
   * running after `SLOW_REBALANCE_STEP_MS` is logged, then as often again, with what it
   * waits for: until it ends, librdkafka holds the group's rebalance (and this worker's partitions).
   */
  private serialize(what: string, waitsFor: string | (() => string), step: () => Promise<void>): void {
    const timed = async () => {
      const started = Date.now();
      const timer = setInterval(() => {
        const waitedMs = Date.now() - started;
        const unacknowledged = this.producer?.unacknowledged ?? 0;
        this.logger.warn(
          { step: what, waitedMs, unacknowledgedWrites: unacknowledged },
          `rebalance step '${what}' still running after ${Math.round(waitedMs / 1_000)} s: it waits for ${typeof waitsFor === 'string' ? waitsFor : waitsFor()}; ${unacknowledged} writes are not acknowledged by Kafka yet`,
        );
      }, SLOW_REBALANCE_STEP_MS);
      timer.unref();
      try {
        await step();
      } finally {
        clearInterval(timer);
      }
    };
    this.rebalances = this.rebalances.then(timed).catch((error: unknown) => {
      // A step cut short by the close (the consumer disconnected under it) fails nothing: the
      // engine has stopped, and the partitions' next owner starts from the committed offsets.
      if (this.closing) this.logger.warn({ err: error }, 'a rebalance step failed while the log closed');
      else this.fail(new Error(`rebalance callback failed: ${(error as Error).message}`, { cause: error }));
    });
  }

  /** Pauses or resumes librdkafka's fetching of these owned partitions; false if librdkafka refused (logged). */
  private setFetching(tps: readonly TopicPartition[], fetching: boolean): boolean {
    if (!this.consumer || this.closing) return false;
    try {
      if (fetching) this.consumer.resume([...tps]);
      else this.consumer.pause([...tps]);
      return true;
    } catch (error) {
      this.logger.warn({ partitions: tps.map(partitionId), error: (error as Error).message }, fetching ? 'resume failed' : 'pause failed');
      return false;
    }
  }

  private fail(error: Error): void {
    if (this.fatal) return;
    this.fatal = error;
    this.logger.error({ err: error }, 'Kafka log failed');
    // The engine hears it through the port, stops, and so does the worker that runs it.
    this.listener?.failed(error);
  }

  private requireConsumer(what: string): Consumer {
    if (!this.consumer) throw new Error(`KafkaLog: ${what} before subscribe()`);
    return this.consumer;
  }

  private requireTransactions(): Transactions {
    if (!this.transactions) throw new Error('KafkaLog: atomic() before subscribe()');
    return this.transactions;
  }

  private requireProducer(): AckedProducer {
    if (!this.producer) throw new Error('KafkaLog: produce before subscribe()');
    return this.producer;
  }
}

/** Moves a partition's ownership, checked against the allowed moves (throws naming the partition, both states and the cause). */
function moveTo(state: PartitionState, to: Ownership, cause: string): void {
  state.ownership = transition(state.tp, state.ownership, to, cause);
}

/** The engine's record of a consumed message; the first one handed over since assignment marks the partition's position. */
function handOver(state: PartitionState, message: Message) {
  if (state.position === undefined) {
    state.position = message.offset;
    // Delivered from the committed offset: its metadata stays, until a commit of this partition replaces it.
    if (state.readBack?.offset === message.offset) state.metadata = state.readBack.metadata;
  }
  return toLogRecord(message);
}

/** The partitions the engine has restored are owned now, unless a rebalance revoked or lost them meanwhile. */
function ownRestored(states: readonly PartitionState[], cause: string): void {
  for (const state of states) if (state.ownership === 'assigning') moveTo(state, 'owned', cause);
}

/** The worker's session timeout, refused by the broker when the consumer joined its group: what to change. */
function sessionTimeoutRefused(settings: KafkaSettings, error: LibrdKafkaError): Error {
  const configured = consumerConfig(settings)['session.timeout.ms'] ?? 45_000;
  // Where the value came from, the last that wins first (see consumerConfig).
  const from =
    settings.consumerConfig?.['session.timeout.ms'] !== undefined
      ? 'session.timeout.ms in --consumer-config (kafka.consumerConfig)'
      : settings.librdkafka?.['session.timeout.ms'] !== undefined
        ? 'session.timeout.ms in -X (kafka.librdkafka)'
        : '--session-timeout-ms (kafka.sessionTimeoutMs)';
  return new Error(
    `Kafka refused this worker's session timeout (session.timeout.ms = ${String(configured)} ms): the broker takes only values within its ` +
      `group.min.session.timeout.ms and group.max.session.timeout.ms (6000 and 1800000 ms by default); set ${from} within them ` +
      `(${error.message}, code ${error.code})`,
    { cause: error },
  );
}
