import type { EntriesOptions, Store, StoreOp } from '../src/ports/store.js';

/** A write as it landed: its value frozen as JSON, as a store would hold it. */
type LandedOp = { readonly type: 'put'; readonly key: string; readonly json: string } | { readonly type: 'del'; readonly key: string };

/**
 * One engine instance's writes that have landed and are not durable yet, over the durable state:
 * a staged store's local copy (on Kafka: LevelDB, whose writes the changelog has not acknowledged,
 * or holds in a transaction not yet committed). Reads see the landed writes first. A crash drops
 * the overlay with its instance, so a restart finds only what was made durable, as a worker
 * restarted after an unclean stop restores its state from the changelog.
 */
export class LandedOverlay {
  /** Batches landed and not yet settled, by sequence number (in landing order). */
  private readonly batches = new Map<number, readonly LandedOp[]>();
  /** The latest landed write of each key, and the batch it came in. */
  private readonly latest = new Map<string, { readonly seq: number; readonly op: LandedOp }>();
  private nextSeq = 0;

  constructor(private readonly durable: () => Store) {}

  /** Lands a batch (every op or none: a value that cannot be stored refuses it whole); returns its sequence number. */
  land(ops: readonly StoreOp[]): number {
    const landed = ops.map(freeze);
    const seq = this.nextSeq++;
    this.batches.set(seq, landed);
    for (const op of landed) this.latest.set(op.key, { seq, op });
    return seq;
  }

  /** The batch's ops, as landed. */
  ops(seq: number): StoreOp[] {
    const batch = this.batches.get(seq);
    if (!batch) throw new Error(`LandedOverlay: batch ${seq} is not landed, or settled already`);
    return batch.map(thaw);
  }

  /** The batch is in the durable state now: reads of its keys go there, unless a later batch wrote them. */
  settle(seq: number): void {
    const batch = this.batches.get(seq);
    if (!batch) return;
    this.batches.delete(seq);
    for (const op of batch) if (this.latest.get(op.key)?.seq === seq) this.latest.delete(op.key);
  }

  /**
   * Drops every landed write (an aborted transaction's, say), or those whose keys `dropped` picks
   * (the partitions a reset restores): reads find the durable state again, as after a restore
   * from the changelog.
   */
  clear(dropped?: (key: string) => boolean): void {
    if (!dropped) {
      this.batches.clear();
      this.latest.clear();
      return;
    }
    for (const [seq, batch] of this.batches) {
      const kept = batch.filter((op) => !dropped(op.key));
      if (kept.length === batch.length) continue;
      if (kept.length === 0) this.batches.delete(seq);
      else this.batches.set(seq, kept);
    }
    for (const key of [...this.latest.keys()]) if (dropped(key)) this.latest.delete(key);
  }

  /** True while the batch is landed and neither settled nor cleared. */
  has(seq: number): boolean {
    return this.batches.has(seq);
  }

  /** Landed batches not yet settled. */
  get pending(): number {
    return this.batches.size;
  }

  get<T>(key: string): T | undefined {
    const landed = this.latest.get(key);
    if (!landed) return this.durable().get<T>(key);
    return landed.op.type === 'put' ? (JSON.parse(landed.op.json) as T) : undefined;
  }

  async entries<T>(prefix: string, options?: EntriesOptions): Promise<Array<[string, T]>> {
    const rows = new Map(await this.durable().entries<T>(prefix));
    for (const [key, { op }] of this.latest) {
      if (!key.startsWith(prefix)) continue;
      if (op.type === 'put') rows.set(key, JSON.parse(op.json) as T);
      else rows.delete(key);
    }
    const after = options?.after;
    const sorted = [...rows].filter(([key]) => after === undefined || key > after).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return options?.limit === undefined ? sorted : sorted.slice(0, options.limit);
  }
}

function freeze(op: StoreOp): LandedOp {
  if (op.type === 'del') return { type: 'del', key: op.key };
  const json = op.value === undefined || op.value === null ? undefined : (op.json ?? JSON.stringify(op.value));
  // As LevelDB and the driver's write-behind store refuse them.
  if (json === undefined) throw new TypeError(`state: the value of '${op.key}' cannot be null, undefined or unstorable as JSON`);
  return { type: 'put', key: op.key, json };
}

function thaw(op: LandedOp): StoreOp {
  return op.type === 'del' ? op : { type: 'put', key: op.key, value: JSON.parse(op.json) };
}
