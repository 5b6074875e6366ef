import type { TopicPartition } from '../ports/log.js';
import type { EntriesOptions, Store, StoreOp } from '../ports/store.js';
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
  /** Offsets with an attempts record, by partition prefix (`…/<partition>/`), of every partition written or loaded. */
  private readonly known = new Map<string, Set<number>>();
  /** The loaded partitions' prefixes: of these, an offset not known has no record. */
  private readonly loaded = new Set<string>();
  /** Prefixes by store, topic and partition, built once: an event's lookup builds no string. */
  private readonly prefixes = new Map<string, Map<string, string[]>>();
  private readonly kind: string;

  readonly openPartition?: NonNullable<Store['openPartition']>;
  readonly closePartition?: NonNullable<Store['closePartition']>;
  readonly committed?: NonNullable<Store['committed']>;
  readonly stage?: NonNullable<Store['stage']>;

  constructor(private readonly inner: Store) {
    if (inner.openPartition) this.openPartition = (tp, committed, signal) => inner.openPartition!(tp, committed, signal);
    if (inner.committed) this.committed = (tp, offset) => inner.committed!(tp, offset);
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

  /** Reads the partition's attempts records in `store`, then answers for them from memory. */
  async load(store: string, tp: TopicPartition): Promise<void> {
    const prefix = this.prefixOf(store, tp);
    this.loaded.delete(prefix);
    const offsets = new Set<number>();
    this.known.set(prefix, offsets);
    for (const [key] of await this.inner.entries(prefix)) offsets.add(offsetOf(key));
    this.loaded.add(prefix);
  }

  /** The attempts record of an event in `store`, as `get` of its key answers, without building the key when its partition is loaded. */
  attemptsOf<T>(store: string, tp: TopicPartition, offset: number): T | undefined {
    const prefix = this.prefixOf(store, tp);
    if (this.loaded.has(prefix) && !this.known.get(prefix)!.has(offset)) return undefined;
    return this.inner.get<T>(stateKeys.attemptsIn(store, tp, offset));
  }

  get<T>(key: string): T | undefined {
    if (key.startsWith(this.kind)) {
      // Of a loaded partition (the key up to its last '/' is a loaded prefix, so nothing but the
      // offset follows it) and not known: no such record.
      const cut = key.lastIndexOf('/') + 1;
      const prefix = key.slice(0, cut);
      if (this.loaded.has(prefix) && !this.known.get(prefix)!.has(offsetOf(key))) return undefined;
    }
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
      const prefix = op.key.slice(0, op.key.lastIndexOf('/') + 1);
      let offsets = this.known.get(prefix);
      if (!offsets) this.known.set(prefix, (offsets = new Set()));
      if (op.type === 'put') offsets.add(offsetOf(op.key));
      else offsets.delete(offsetOf(op.key));
    }
  }

  private prefixOf(store: string, tp: TopicPartition): string {
    let byTopic = this.prefixes.get(store);
    if (!byTopic) this.prefixes.set(store, (byTopic = new Map()));
    let byPartition = byTopic.get(tp.topic);
    if (!byPartition) byTopic.set(tp.topic, (byPartition = []));
    let prefix = byPartition[tp.partition];
    if (prefix === undefined) {
      const sample = stateKeys.attemptsIn(store, tp, 0);
      prefix = byPartition[tp.partition] = sample.slice(0, sample.lastIndexOf('/') + 1);
    }
    return prefix;
  }

  entries<T>(prefix: string, options?: EntriesOptions): Promise<Array<[string, T]>> {
    return this.inner.entries<T>(prefix, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** The offset an attempts key ends with. */
function offsetOf(key: string): number {
  return Number(key.slice(key.lastIndexOf('/') + 1));
}
