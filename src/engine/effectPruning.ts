import type { TopicPartition } from '../ports/log.js';
import type { Store, StoreOp } from '../ports/store.js';
import { stateKeys } from '../state/stateKeys.js';
import type { EffectRecord } from './outputs.js';

/** How long a declared effect id's record is kept by default: a week (ApplyOnceOptions.idRetentionMs). */
export const DEFAULT_ID_RETENTION_MS = 7 * 24 * 60 * 60 * 1_000;
/** Records read per page when a partition's leftovers are scanned, and at least per sweep round. */
const PAGE = 1_000;
/** A sweep of the declared ids starts again at most this often, and at most every tenth of the window. */
const SWEEP_EVERY_MAX_MS = 60 * 60 * 1_000;

/** An effect record found in the store at assignment, not pruned yet: it may be the record of an event still held behind a parked key. */
interface Found {
  readonly offset: number;
  readonly key: string;
}

/** Where a partition's effect records are and how long a declared id is kept. */
export interface EffectPruningOptions {
  readonly store: Store;
  /** The applyOnce's store. */
  readonly effectStore: string;
  /** The park's store, when the topology parks: a record of a held event is kept until its replay. */
  readonly parkStore: string | undefined;
  readonly tp: TopicPartition;
  /** Present when effect ids are declared (not derived from offsets): how long their records are kept. */
  readonly idRetentionMs: number | undefined;
}

/**
 * Prunes one partition's effect records once no event can need them (docs/guarantees.md, "How
 * long effect records are kept"), in batches at commit time, never one write per event:
 *
 * - an id derived from an offset is looked up only when that offset is delivered again, which the
 *   log does only from the committed offset on: a record below the committed offset is pruned,
 *   unless its event is still held behind a parked key (then its replay needs it, and it is
 *   pruned after the replay). The records this engine writes are followed in memory; those found
 *   at assignment (left by a crash, another worker or an older version) are read once then.
 * - a declared id may come again at any offset: its record is kept for `idRetentionMs` after its
 *   effect was applied (the record's time, from the clock port), then pruned by a sweep that reads
 *   the partition's records a page at a time, at least twice as fast as they are written.
 *
 * Only the deletes are built here; the engine writes them through its state writer, so that on
 * Kafka each becomes a tombstone on the changelog (in the transaction, exactly-once).
 */
export class EffectPruning {
  /**
   * The records this engine wrote (ids derived from offsets), not pruned yet: their offsets, and
   * at the same index their keys (the very strings the engine wrote them under, whose hashes the
   * store's maps have already computed). Two arrays rather than an object per record: these live
   * from one commit to the next, past the young generation of the garbage collector.
   */
  private writtenOffsets: number[] = [];
  private writtenKeys: string[] = [];
  private found: Found[] = [];
  private readonly prefix: string;
  /** Declared ids: the last key the sweep read (undefined: the next round starts a pass from the first). */
  private sweptTo: string | undefined;
  private sweeping = false;
  private passStartedAtMs = Number.NEGATIVE_INFINITY;
  /** Declared ids: records written since the last sweep round, so that the sweep keeps ahead of them. */
  private writtenSinceRound = 0;

  constructor(private readonly options: EffectPruningOptions) {
    this.prefix = stateKeys.effectPartitionPrefix(options.effectStore, options.tp);
  }

  /**
   * Reads the partition's effect records once its state is restored (ids derived from offsets):
   * returns the deletes of those below `committed` (leftovers), and follows the others.
   */
  async load(committed: number | undefined): Promise<StoreOp[]> {
    this.writtenOffsets = [];
    this.writtenKeys = [];
    this.found = [];
    if (this.options.idRetentionMs !== undefined) return [];
    for (let after: string | undefined; ;) {
      const page = await this.options.store.entries<EffectRecord>(this.prefix, after === undefined ? { limit: PAGE } : { limit: PAGE, after });
      for (const [key, record] of page) this.found.push({ offset: record.offset, key });
      if (page.length < PAGE) break;
      after = page[page.length - 1]![0];
    }
    return committed === undefined ? [] : this.offsetDerived(committed);
  }

  /** An event's effect record (its state key `key`) was written (or found, replaying a held event), and its event has ended. */
  recorded(offset: number, key: string): void {
    if (this.options.idRetentionMs !== undefined) {
      this.writtenSinceRound += 1;
      return;
    }
    this.writtenOffsets.push(offset);
    this.writtenKeys.push(key);
  }

  /** The deletes of every record no event can need any more, with the partition committed up to `committed` (exclusive). */
  async prunable(committed: number, nowMs: number): Promise<StoreOp[]> {
    if (this.options.idRetentionMs === undefined) return this.offsetDerived(committed);
    return this.sweep(committed, nowMs, this.options.idRetentionMs);
  }

  private offsetDerived(committed: number): StoreOp[] {
    const ops: StoreOp[] = [];
    const offsets: number[] = [];
    const keys: string[] = [];
    for (let i = 0; i < this.writtenOffsets.length; i++) {
      const key = this.writtenKeys[i]!;
      if (this.writtenOffsets[i]! < committed) {
        ops.push({ type: 'del', key });
        continue;
      }
      offsets.push(this.writtenOffsets[i]!);
      keys.push(key);
    }
    this.writtenOffsets = offsets;
    this.writtenKeys = keys;
    if (this.found.length === 0) return ops;
    const found: Found[] = [];
    for (const f of this.found) {
      if (f.offset < committed && !this.held(f.key)) ops.push({ type: 'del', key: f.key });
      else found.push(f);
    }
    this.found = found;
    return ops;
  }

  /** One round of the sweep of declared ids: a page of records, those past the window and below the committed offset pruned. */
  private async sweep(committed: number, nowMs: number, retentionMs: number): Promise<StoreOp[]> {
    if (!this.sweeping) {
      if (nowMs - this.passStartedAtMs < Math.min(SWEEP_EVERY_MAX_MS, retentionMs / 10)) return [];
      this.sweeping = true;
      this.passStartedAtMs = nowMs;
      this.sweptTo = undefined;
    }
    const limit = PAGE + 2 * this.writtenSinceRound;
    this.writtenSinceRound = 0;
    const after = this.sweptTo;
    const page = await this.options.store.entries<EffectRecord>(this.prefix, after === undefined ? { limit } : { limit, after });
    const ops: StoreOp[] = [];
    for (const [key, record] of page) {
      if (record.appliedAtMs + retentionMs <= nowMs && record.offset < committed && !this.held(key)) ops.push({ type: 'del', key });
    }
    if (page.length < limit) this.sweeping = false;
    else this.sweptTo = page[page.length - 1]![0];
    return ops;
  }

  /** True while the event of this record is held behind a parked key: its replay looks the record up. */
  private held(key: string): boolean {
    const park = this.options.parkStore;
    if (park === undefined) return false;
    return this.options.store.get(stateKeys.heldIndex(park, this.options.tp, key.slice(this.prefix.length))) !== undefined;
  }
}
