import type { TopicPartition } from '../ports/log.js';
import type { Store, StoreOp } from '../ports/store.js';
import { stateKeys } from '../state/stateKeys.js';

/**
 * The engine's Store, knowing which attempts records exist in the partitions it has loaded. An
 * event's attempts are looked up before every call of the step, and there are none unless an
 * earlier attempt failed: with the partition's records loaded at assignment, that lookup is a set
 * lookup instead of a LevelDB read. Every write goes through this store, so the set follows the
 * writes in the order they are made; a key it knows of is still read from the store.
 *
 * An attempts key ends with the event's offset after the partition's prefix (`…/<partition>/<offset>`).
 * It forwards every member of the Store port to the store it wraps: a member added to the port
 * must be forwarded here too.
 */
export class AttemptsIndexedStore implements Store {
  private readonly known = new Set<string>();
  /** The loaded partitions' prefixes (`…/<partition>/`). */
  private readonly loaded = new Set<string>();
  private readonly kind: string;

  readonly openPartition?: Store['openPartition'];
  readonly closePartition?: Store['closePartition'];
  readonly stage?: Store['stage'];

  constructor(private readonly inner: Store) {
    if (inner.openPartition) this.openPartition = (tp) => inner.openPartition!(tp);
    if (inner.closePartition) this.closePartition = (tp) => inner.closePartition!(tp);
    if (inner.stage) {
      this.stage = (ops) => {
        this.follow(ops);
        return inner.stage!(ops);
      };
    }
    const sample = stateKeys.attempts('step', { topic: 'topic', partition: 0 }, 0);
    this.kind = sample.slice(0, sample.indexOf('/') + 1);
  }

  get location(): string {
    return this.inner.location;
  }

  /** Reads the partition's attempts records, then answers for them from memory. */
  async load(step: string, tp: TopicPartition): Promise<void> {
    const sample = stateKeys.attempts(step, tp, 0);
    const prefix = sample.slice(0, sample.lastIndexOf('/') + 1);
    this.loaded.delete(prefix);
    for (const key of this.known) if (key.startsWith(prefix)) this.known.delete(key);
    for (const [key] of await this.inner.entries(prefix)) this.known.add(key);
    this.loaded.add(prefix);
  }

  get<T>(key: string): T | undefined {
    // Of a loaded partition (the key up to its last '/' is a loaded prefix, so nothing but the
    // offset follows it) and not known: no such record.
    if (key.startsWith(this.kind) && !this.known.has(key) && this.loaded.has(key.slice(0, key.lastIndexOf('/') + 1))) return undefined;
    return this.inner.get<T>(key);
  }

  batch(ops: readonly StoreOp[]): Promise<void> {
    this.follow(ops);
    return this.inner.batch(ops);
  }

  /** Notes the attempts records that a batch writes or deletes. */
  private follow(ops: readonly StoreOp[]): void {
    for (const op of ops) {
      if (!op.key.startsWith(this.kind)) continue;
      if (op.type === 'put') this.known.add(op.key);
      else this.known.delete(op.key);
    }
  }

  entries<T>(prefix: string): Promise<Array<[string, T]>> {
    return this.inner.entries<T>(prefix);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
