import type { TopicPartition } from './log.js';

/** How much of a prefix `entries` reads. */
export interface EntriesOptions {
  /** At most this many entries, the first in key order. */
  readonly limit?: number;
  /** Only the entries whose keys sort after this one: a scan goes on in pages from the last key it read. */
  readonly after?: string;
}

/** One write of an atomic batch. */
export type StoreOp =
  | {
      readonly type: 'put';
      readonly key: string;
      readonly value: unknown;
      /** The value's JSON, when whoever staged the put made it already (an effect's state table does, to refuse a value JSON cannot hold): stores use it rather than make it again. */
      readonly json?: string;
    }
  | { readonly type: 'del'; readonly key: string };

/**
 * A batch a store makes durable in two steps (see {@link Store.stage}). `durable` settles after
 * `landed`, and rejects whenever `landed` rejects.
 */
export interface StagedBatch {
  /** The ops are applied locally (every op or none, after every batch staged before) and what makes them durable has been started, in order. */
  readonly landed: Promise<void>;
  /** The ops are durable, as {@link Store.batch} means it. */
  readonly durable: Promise<void>;
}

/**
 * The Store port: a sorted key-value store with atomic batches. Reads are synchronous (LevelDB's
 * `getSync` costs about 2 µs, its asynchronous `get` about 75 µs); writes are atomic batches.
 *
 * Every key belongs to one source partition (see `stateKeys`). A store whose state follows its
 * partition to another worker (Kafka's changelog store) hears when this engine takes a partition
 * over and when it hands it back; a store that lives and dies with one engine (memory, or the
 * test driver's LevelDB) needs neither.
 */
export interface Store {
  /** Where the state lives, for error messages (a directory, or `memory`). */
  readonly location: string;
  get<T>(key: string): T | undefined;
  /** Applies every op or none; settles when they are durable (for a changelog store: acknowledged). */
  batch(ops: readonly StoreOp[]): Promise<void>;
  /**
   * `batch` in two steps, for a store whose durability lies beyond the local write (the changelog
   * store: Kafka's acknowledgement). The caller may stage the next batch once `landed` settles,
   * while this one is still being made durable: its local write then lands after this one, and
   * its durability is started after this one's. Absent: the caller awaits `batch`.
   */
  stage?(ops: readonly StoreOp[]): StagedBatch;
  /** Every entry whose key starts with `prefix`, in key order; with `limit`, the first `limit` of them. */
  entries<T>(prefix: string, options?: EntriesOptions): Promise<Array<[string, T]>>;
  /**
   * The engine takes the partition over: settles once the store holds the partition's state
   * (restored from wherever it is kept), before any of its state is read or written. `committed`
   * is the group's committed offset of the partition (undefined: none): no event below it is
   * delivered again. When `signal` aborts (the engine stops or failed), a restore still under way
   * may end early, rejecting with an error whose `cause` is `signal.reason`: the partition is then
   * neither run nor handed back ({@link Store.closePartition}), and the store keeps what its next
   * restore needs to complete the state.
   */
  openPartition?(tp: TopicPartition, committed?: number, signal?: AbortSignal): Promise<void>;
  /**
   * The engine committed the partition's offsets below `offset`: no event below it is delivered
   * again, so what only such an event would read need not be kept (the changelog store stops
   * carrying their effect records). Called in order, after each commit.
   */
  committed?(tp: TopicPartition, offset: number): void;
  /**
   * The engine handed the partition back cleanly (its work finished and its offsets committed):
   * the store may note that its local copy is complete, to restore less the next time.
   */
  closePartition?(tp: TopicPartition): Promise<void>;
  close(): Promise<void>;
}

/**
 * Whether `error` is a restore's abandonment by `signal` ({@link Store.openPartition}'s contract:
 * its `cause` is the signal's reason), rather than a failure of the restore's own.
 */
export function isAbandonment(error: unknown, signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true && (error as Error | undefined)?.cause === signal.reason;
}
