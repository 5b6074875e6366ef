import { Level } from 'level';
import { MemoryLevel } from 'memory-level';
import type { AbstractLevel } from 'abstract-level';
import type { EntriesOptions, Store, StoreOp } from '../ports/store.js';
import { decodeLocalValue, encodeLocalValue, localFromJson } from './storedFormat.js';

type Db = AbstractLevel<string | Buffer | Uint8Array, string, unknown>;

/** Thrown when a state directory cannot be opened; `code` says why. */
export class StateDirectoryError extends Error {
  constructor(
    readonly directory: string,
    readonly code: 'LOCKED' | 'UNREADABLE',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'StateDirectoryError';
  }
}

/** A local store that can also drop a range of keys without reading their values. */
export interface LocalStore extends Store {
  /** Deletes every key that starts with `prefix`, in batches of `batchSize`; returns how many. */
  deletePrefix(prefix: string, batchSize?: number): Promise<number>;
}

class LevelStore implements LocalStore {
  constructor(
    private readonly db: Db,
    readonly location: string,
  ) {}

  get<T>(key: string): T | undefined {
    const text = this.db.getSync(key) as string | undefined;
    return text === undefined ? undefined : (decodeLocalValue(key, text) as T);
  }

  async batch(ops: readonly StoreOp[]): Promise<void> {
    if (ops.length === 0) return;
    // A chained batch: each op reaches LevelDB's binding as arguments, where an array batch has the
    // binding read every op's fields one by one, which costs the main thread twice as much per op.
    const batch = this.db.batch();
    try {
      for (const op of ops) {
        if (op.type === 'del') {
          batch.del(op.key);
          continue;
        }
        // A put that carries `valueEncoding: 'utf8'` holds its stored text already (the changelog
        // store encodes once for LevelDB and the changelog); every other put is encoded here.
        // Never a put with options of its own: abstract-level takes those about 7 times slower.
        const encoding = (op as { valueEncoding?: unknown }).valueEncoding;
        if (encoding === undefined) batch.put(op.key, encodeValue(op));
        else if (encoding === 'utf8') batch.put(op.key, op.value as string);
        else throw new TypeError(`state key '${op.key}': a put's valueEncoding must be 'utf8' (its stored text) or absent, got ${JSON.stringify(encoding)}`);
      }
    } catch (error) {
      // Refused whole, as LevelDB refuses an array batch with an invalid op.
      await batch.close();
      throw error;
    }
    await batch.write();
  }

  async entries<T>(prefix: string, options?: EntriesOptions): Promise<Array<[string, T]>> {
    // '\uffff' sorts after every character a key of ours can hold, so this is the prefix's range.
    const from = options?.after !== undefined && options.after >= prefix ? { gt: options.after } : { gte: prefix };
    const range = { ...from, lt: `${prefix}\uffff`, ...(options?.limit !== undefined ? { limit: options.limit } : {}) };
    const raw = (await this.db.iterator(range).all()) as Array<[string, string]>;
    return raw.map(([key, text]) => [key, decodeLocalValue(key, text) as T]);
  }

  async deletePrefix(prefix: string, batchSize = 10_000): Promise<number> {
    let deleted = 0;
    for (;;) {
      // Keys only, a batch at a time: a partition's effects may not fit in memory with their values.
      const keys = await this.db.keys({ gte: prefix, lt: `${prefix}\uffff`, limit: batchSize }).all();
      if (keys.length === 0) return deleted;
      await this.db.batch(keys.map((key) => ({ type: 'del' as const, key })));
      deleted += keys.length;
    }
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

function encodeValue(op: StoreOp & { type: 'put' }): string {
  // LevelDB refuses null and undefined values, naming them (the whole batch with them): as before.
  if (op.value === null || op.value === undefined) return op.value as unknown as string;
  const text = op.json !== undefined ? localFromJson(op.json) : encodeLocalValue(op.value);
  if (text === undefined) throw new TypeError(`state key '${op.key}': its value (${typeof op.value}) has no JSON form; orderly stores JSON values only`);
  return text;
}

/**
 * LevelDB's memtable, 16 MiB as Kafka Streams gives RocksDB (LevelDB's own is 4 MiB). Effect
 * records and table rows are written over and over: a larger memtable keeps more of those
 * overwrites out of the files compaction rewrites, and fewer level-0 files for a read to look in.
 * Measured on bench:peers (200,000 events): 79 µs of CPU per event at 4 MiB, 61 at 16, 61–65 at 64
 * (docs/benchmarks.md); it costs up to twice this much memory while a full memtable is flushed.
 */
const WRITE_BUFFER_BYTES = 16 * 2 ** 20;

/**
 * Opens orderly's state in a LevelDB directory. One process at a time may hold a directory:
 * a second one gets a {@link StateDirectoryError} naming it, never a shared, corrupted store.
 */
export async function openLevelStore(directory: string): Promise<LocalStore> {
  const db = new Level<string, string>(directory, { valueEncoding: 'utf8', writeBufferSize: WRITE_BUFFER_BYTES }) as unknown as Db;
  try {
    await db.open();
  } catch (error) {
    throw describeOpenFailure(directory, error);
  }
  return new LevelStore(db, directory);
}

/** Opens orderly's state in memory (memory-level): the same API and ordering, gone with the process. */
export async function openMemoryStore(): Promise<LocalStore> {
  const db = new MemoryLevel<string, string>({ valueEncoding: 'utf8' }) as unknown as Db;
  await db.open();
  return new LevelStore(db, 'memory');
}

function describeOpenFailure(directory: string, error: unknown): StateDirectoryError {
  const cause = (error as { cause?: { code?: string } }).cause;
  if (cause?.code === 'LEVEL_LOCKED') {
    return new StateDirectoryError(
      directory,
      'LOCKED',
      `state directory '${directory}' is in use by another orderly process (its LevelDB lock is held): ` +
        'stop that process, or give this one its own --state-dir',
      { cause: error },
    );
  }
  return new StateDirectoryError(
    directory,
    'UNREADABLE',
    `state directory '${directory}' could not be opened as LevelDB: check that it exists, is writable and was written by orderly`,
    { cause: error },
  );
}
