import type { LibrdKafkaError, TopicPartitionOffset } from '@confluentinc/kafka-javascript';
import { partitionId, type CommitOffset } from '../../ports/log.js';

/** librdkafka's "nothing to commit": the offsets are committed already. */
const ERR_NO_OFFSET = -168;

/**
 * Errors after which the same commit may succeed soon: the coordinator is loading or moving, a
 * request or the connection timed out.
 */
const RETRIABLE = new Set([
  -195, // _TRANSPORT
  -185, // _TIMED_OUT
  -166, // _TIMED_OUT_QUEUE: the request waited in the client's queue past its timeout
  -187, // _ALL_BROKERS_DOWN
  -180, // _WAIT_COORD
  7, // REQUEST_TIMED_OUT
  14, // COORDINATOR_LOAD_IN_PROGRESS
  15, // COORDINATOR_NOT_AVAILABLE
  16, // NOT_COORDINATOR
]);

/**
 * Errors that say a rebalance took the commit's partitions, or is moving them: the same commit
 * will not succeed now (and retrying it here would hold a rebalance callback that waits for it).
 * The engine is told with a CommitRefusedError and goes on.
 */
const REFUSED_BY_REBALANCE = new Set([
  -172, // _STATE: no assignment (being revoked, or lost)
  -142, // _ASSIGNMENT_LOST
  22, // ILLEGAL_GENERATION
  25, // UNKNOWN_MEMBER_ID
  69, // GROUP_ID_NOT_FOUND: the group was emptied when this member, its last, was dropped (seen after a lost session)
  27, // REBALANCE_IN_PROGRESS
  110, // FENCED_MEMBER_EPOCH (KIP-848)
  113, // STALE_MEMBER_EPOCH (KIP-848)
]);

/** A commit that failed, with librdkafka's error code. */
export class CommitError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
    this.name = 'CommitError';
  }
}

export function isRetriableCommitError(error: unknown): boolean {
  return error instanceof CommitError && RETRIABLE.has(error.code);
}

/** OFFSET_METADATA_TOO_LARGE: the broker refused the commit's metadata (past its offset.metadata.max.bytes). */
const METADATA_TOO_LARGE = 12;

export function isMetadataTooLarge(error: unknown): boolean {
  return error instanceof CommitError && error.code === METADATA_TOO_LARGE;
}

/** True when a rebalance took the commit: see REFUSED_BY_REBALANCE. */
export function isRefusedByRebalance(error: unknown): boolean {
  return error instanceof CommitError && REFUSED_BY_REBALANCE.has(error.code);
}

interface Pending {
  readonly key: string;
  resolve(): void;
  reject(error: Error): void;
}

/** The consumer's commit call (asynchronous in librdkafka: it only enqueues the commit). */
interface Committer {
  commit(offsets: TopicPartitionOffset[]): unknown;
}

/** Offsets named as the log lines and errors name them: `topic/partition@offset`. */
export function offsetIds(offsets: ReadonlyArray<{ topic: string; partition: number; offset: number }>): string[] {
  return offsets.map((o) => `${partitionId(o)}@${o.offset}`);
}

function keyOf(offsets: ReadonlyArray<{ topic: string; partition: number; offset: number }>): string {
  return offsetIds(offsets).sort().join(',');
}

/**
 * Turns librdkafka's asynchronous commit into a promise that settles when the broker answered:
 * each commit waits for its `offset_commit_cb` (matched by its offsets; else the oldest waiting).
 */
export class CommitWaiter {
  private readonly pending: Pending[] = [];

  commit(consumer: Committer, offsets: readonly CommitOffset[]): Promise<void> {
    // The metadata goes with its offset (librdkafka keeps it; an offset without it clears the one committed before).
    const list = offsets.map(({ topic, partition, offset, metadata }) => (metadata ? { topic, partition, offset, metadata } : { topic, partition, offset }));
    return new Promise<void>((resolve, reject) => {
      const entry: Pending = { key: keyOf(list), resolve, reject };
      this.pending.push(entry);
      try {
        consumer.commit(list);
      } catch (error) {
        this.pending.splice(this.pending.indexOf(entry), 1);
        const e = error as LibrdKafkaError;
        reject(new CommitError(e.message ?? String(error), e.code ?? 0));
      }
    });
  }

  /** librdkafka's offset_commit_cb. */
  settled(error: LibrdKafkaError | undefined, offsets: readonly TopicPartitionOffset[] | undefined): void {
    const key = keyOf(offsets ?? []);
    const index = this.pending.findIndex((p) => p.key === key);
    const [entry] = this.pending.splice(index < 0 ? 0 : index, 1);
    if (!entry) return;
    const failed = (offsets ?? []).find((o) => o.error && o.error.code !== 0);
    if (error && error.code !== ERR_NO_OFFSET) entry.reject(new CommitError(error.message ?? `code ${error.code}`, error.code));
    else if (failed?.error) entry.reject(new CommitError(`${partitionId(failed)}: ${failed.error.message}`, failed.error.code));
    else entry.resolve();
  }

  /** Rejects every commit still waiting (the consumer is closed; they will never be answered). */
  abandon(error: Error): void {
    for (const entry of this.pending.splice(0)) entry.reject(error);
  }
}
