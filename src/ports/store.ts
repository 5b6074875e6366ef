/** One write of an atomic batch. */
export type StoreOp =
  | { readonly type: 'put'; readonly key: string; readonly value: unknown }
  | { readonly type: 'del'; readonly key: string };

/**
 * The Store port: a sorted key-value store with atomic batches. Reads are synchronous (LevelDB's
 * `getSync` costs about 2 µs, its asynchronous `get` about 75 µs); writes are atomic batches.
 */
export interface Store {
  /** Where the state lives, for error messages (a directory, or `memory`). */
  readonly location: string;
  get<T>(key: string): T | undefined;
  /** Applies every op or none. */
  batch(ops: readonly StoreOp[]): Promise<void>;
  /** Every entry whose key starts with `prefix`, in key order. */
  entries<T>(prefix: string): Promise<Array<[string, T]>>;
  close(): Promise<void>;
}
