/** A topic and one of its partitions. */
export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** Record headers, as UTF-8 strings. */
export type Headers = Readonly<Record<string, string>>;

/** One record read from a partition of the log. */
export interface LogRecord extends TopicPartition {
  readonly offset: number;
  readonly key: string | null;
  readonly value: Uint8Array | null;
  readonly timestampMs: number;
  readonly headers: Headers;
}

/** One record to append to a topic; the log chooses the partition from the key unless one is given. */
export interface OutRecord {
  readonly topic: string;
  readonly key: string | null;
  readonly value: Uint8Array | null;
  readonly headers?: Headers;
  readonly partition?: number;
}

/** The next offset to read of a partition, as Kafka commits it. */
export interface CommitOffset extends TopicPartition {
  readonly offset: number;
  /**
   * Kept with the offset (Kafka's commit metadata, at most the broker's `offset.metadata.max.bytes`,
   * 4,096 by default): the engine lists there the finished offsets above this one. Absent or
   * empty: none; a commit replaces what the previous one kept.
   */
  readonly metadata?: string;
}

/** A partition given to this consumer, with what its group committed for it when it was given. */
export interface AssignedPartition extends TopicPartition {
  /**
   * The group's committed offset and its metadata, read back at assignment; absent when nothing
   * was committed (or the log could not read it: the engine then redelivers as without metadata).
   */
  readonly committed?: { readonly offset: number; readonly metadata?: string };
}

/**
 * What the log tells the engine. The log owns the consume loop: `records` must return at once,
 * so that a slow step never delays the next poll.
 */
export interface LogListener {
  /**
   * Partitions now owned, each with its committed offset and metadata; the log delivers none of
   * their records before this settles, and then delivers them from that committed offset.
   */
  assigned(partitions: readonly AssignedPartition[]): Promise<void>;
  /**
   * Partitions about to be taken away; the log waits for this to settle before giving them up, so
   * the engine may still commit them (it aborts their work in flight first, to settle quickly).
   */
  revoked(partitions: readonly TopicPartition[]): Promise<void>;
  /**
   * Partitions already taken away, without a chance to commit (this consumer missed its session
   * timeout, or was fenced): another consumer may own them now, so the engine drops their work and
   * commits none of their offsets. The log waits for this to settle before it forgets them.
   */
  lost(partitions: readonly TopicPartition[]): Promise<void>;
  /** Records of assigned partitions, in offset order within each partition. */
  records(batch: readonly LogRecord[]): void;
  /**
   * The log failed for good (a fatal client error, a rebalance step that threw): the engine stops.
   * It is the only way a log reports such an error, so whoever runs the engine hears it through
   * the engine's observer, in one place.
   */
  failed(error: Error): void;
}

/**
 * A commit the log refused because its partitions are being rebalanced, or are no longer this
 * consumer's (a stale generation or member). The engine goes on: a later commit carries the same
 * offsets if it still owns the partitions, else their next owner reads from the last committed
 * offset (at-least-once; effects stay once through their effect ids). Any other error a commit
 * rejects with stops the engine.
 */
export class CommitRefusedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CommitRefusedError';
  }
}

/** True for a {@link CommitRefusedError} (by name too, so copies of the class from two builds agree). */
export function isCommitRefused(error: unknown): boolean {
  return error instanceof CommitRefusedError || (error instanceof Error && error.name === 'CommitRefusedError');
}

/**
 * The Log port: a partitioned, replayable log with a consumer group (Kafka, or the test driver's
 * in-memory log).
 */
export interface Log {
  subscribe(topics: readonly string[], listener: LogListener): Promise<void>;
  /** Stop delivering records of these partitions until resumed; what was delivered stays delivered. */
  pause(partitions: readonly TopicPartition[]): void;
  resume(partitions: readonly TopicPartition[]): void;
  /**
   * Settles when the broker has the offsets and their metadata; rejects with
   * {@link CommitRefusedError} when a rebalance took them.
   */
  commit(offsets: readonly CommitOffset[]): Promise<void>;
  /** Settles once every record is durably appended (acknowledged). */
  produce(records: readonly OutRecord[]): Promise<void>;
  /**
   * The partition's high watermark (the offset the next record appended to it will get) as this
   * consumer last heard it, or undefined before it has heard one (a partition not fetched yet).
   * It must return at once: the metrics read it at every scrape to compute the consumer lag.
   */
  highWatermark(tp: TopicPartition): number | undefined;
  /**
   * Present only on a transactional log (Kafka with exactly-once): the records that `work`
   * produces, state changelog records included, become visible in one transaction or not at all,
   * and no commit falls between two of them; a commit's offsets and their metadata go in the
   * transaction too (Kafka's sendOffsetsToTransaction keeps the metadata). The engine runs the end of each event (its state
   * write and its outputs) inside it, and then need not send a finished event's outputs again
   * when it is redelivered: they were committed with its effect record.
   *
   * `partition` names the input partition whose work `work` writes (its event's outputs, the
   * changelog records of that partition's state, its parking records). When a transaction is
   * aborted, the log resets only the partitions whose units entered it, each to its committed
   * offset and state, and the others go on (see docs/delivery.md). The engine writes and produces
   * nothing for a partition outside such a unit; a unit without `partition`, or a record produced
   * outside any unit, counts for every partition.
   */
  atomic?<T>(work: () => Promise<T>, partition?: TopicPartition, options?: AtomicOptions): Promise<T>;
  close(): Promise<void>;
}

/** What a unit of a transactional log's work is (see {@link Log.atomic}). */
export interface AtomicOptions {
  /**
   * The unit only deletes state that no event can need any more (effect records the committed
   * offset has passed). Lost with an aborted transaction, its deletes stay done locally and miss
   * the changelog, where the partition's next restore finds and prunes them again: so it does not
   * make its partition one to reset. @defaultValue false
   */
  readonly prunesOnly?: boolean;
}

/** `topic/partition`, the form used in ids and store keys. */
export function partitionId(tp: TopicPartition): string {
  return `${tp.topic}/${tp.partition}`;
}

/**
 * The log is taking the partition of this write back (exactly-once: its transaction was aborted,
 * and the partition is reset to its committed offset and state): the event stays unfinished, as
 * if it had been given up, and runs again after the reset. A log throws it only for a write made
 * in a unit ({@link Log.atomic}) of a partition it resets.
 */
export class PartitionResetError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PartitionResetError';
  }
}

/** True if `error`, or an error it was caused by, is a {@link PartitionResetError}. */
export function isPartitionReset(error: unknown): boolean {
  return causedBy(error, 'PartitionResetError');
}

/** True if `error`, or an error it was caused by (up to 8 deep), has this name (by name: copies of a class from two builds agree). */
export function causedBy(error: unknown, name: string): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth += 1) {
    if (e.name === name) return true;
  }
  return false;
}
