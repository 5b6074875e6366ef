import type { EntriesOptions, Store, StoreOp } from '../src/ports/store.js';
import { decodeLocalValue, encodeLocalValue, localFromJson } from '../src/state/storedFormat.js';

/** A put whose value is its stored text already (`v2:` and the JSON, as LevelStore writes it): LevelDB takes it as it is. */
type EncodedOp =
  { readonly type: 'put'; readonly key: string; readonly value: string; readonly valueEncoding: 'utf8' } | { readonly type: 'del'; readonly key: string };

/**
 * The driver's state: each batch lands at once in an ordered view of the writes still on their
 * way, and goes to the store (LevelDB) behind it, one physical batch at a time, in order. So the
 * engine computes while LevelDB writes, and what it reads never depends on how long a write
 * took: a read sees the view first, then the store; a scan, a close and the driver's idle point
 * wait until every write has landed.
 *
 * This is the test driver's model of a store, not a production one: its crashes are simulated,
 * and a batch it has accepted is never lost to them (a simulated crash never interrupts a write
 * already accepted: the restart and every later read see it). Each batch is still applied whole
 * or not at all (the writes queued meanwhile go in one LevelDB batch, in order). Values are
 * encoded to JSON when the batch is accepted, so a value changed afterwards by its owner changes
 * neither the view nor LevelDB.
 */
export class WriteBehindStore implements Store {
  // The latest write of each key, in two generations: `queued`, not yet handed to the store, and
  // `writing`, in the physical batch under way. A read looks at the newer first. A generation is
  // dropped whole once it has landed, rather than key by key.
  private queuedView = new Map<string, EncodedOp>();
  private writingView: Map<string, EncodedOp> | undefined;
  private queued: EncodedOp[] = [];
  private writing: Promise<void> | undefined;
  private failure: unknown;

  constructor(private readonly inner: Store) {}

  get location(): string {
    return this.inner.location;
  }

  /** The error of a write that failed in the background, once one has. */
  get failed(): Error | undefined {
    return this.failure === undefined
      ? undefined
      : new Error(`the state store (${this.inner.location}) failed a write: ${String(this.failure)}`, { cause: this.failure });
  }

  get<T>(key: string): T | undefined {
    const op = this.queuedView.get(key) ?? this.writingView?.get(key);
    if (op === undefined) return this.inner.get<T>(key);
    return op.type === 'put' ? (decodeLocalValue(key, op.value) as T) : undefined;
  }

  /** Takes the batch at once: the next read sees it, LevelDB gets it soon after. */
  batch(ops: readonly StoreOp[]): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failed);
    // Nothing to write: and writeQueued must only start with something queued (it awaits first).
    if (ops.length === 0) return Promise.resolve();
    const encoded: EncodedOp[] = new Array(ops.length);
    try {
      for (let i = 0; i < ops.length; i++) encoded[i] = encode(ops[i]!);
    } catch (error) {
      // Refused whole, as LevelDB refuses a batch with an invalid op.
      return Promise.reject(error);
    }
    for (const op of encoded) {
      this.queuedView.set(op.key, op);
      this.queued.push(op);
    }
    this.writing ??= this.writeQueued();
    return Promise.resolve();
  }

  async entries<T>(prefix: string, options?: EntriesOptions): Promise<Array<[string, T]>> {
    await this.drained();
    return this.inner.entries<T>(prefix, options);
  }

  /** Settles once every accepted batch is in the store; rejects if one failed. */
  async drained(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.failure !== undefined) throw this.failed;
  }

  async close(): Promise<void> {
    try {
      await this.drained();
    } finally {
      await this.inner.close();
    }
  }

  private async writeQueued(): Promise<void> {
    while (this.queued.length > 0 && this.failure === undefined) {
      const ops = this.queued;
      this.writingView = this.queuedView;
      this.queued = [];
      this.queuedView = new Map();
      try {
        await this.inner.batch(ops);
      } catch (error) {
        // The view keeps the failed writes: nothing the engine was told is written goes missing.
        this.failure = error;
        break;
      }
      this.writingView = undefined;
    }
    this.writing = undefined;
  }
}

function encode(op: StoreOp): EncodedOp {
  if (op.key === null || op.key === undefined) throw new TypeError('state: a key cannot be null or undefined (as in LevelDB)');
  if (op.type === 'del') return { type: 'del', key: op.key };
  // LevelDB refuses these too: the driver must not accept what production would not.
  if (op.value === null || op.value === undefined) throw new TypeError(`state: the value of '${op.key}' cannot be null or undefined (as in LevelDB)`);
  const value = op.json !== undefined ? localFromJson(op.json) : encodeLocalValue(op.value);
  if (value === undefined) throw new TypeError(`state: the value of '${op.key}' cannot be stored as JSON`);
  return { type: 'put', key: op.key, value, valueEncoding: 'utf8' };
}
