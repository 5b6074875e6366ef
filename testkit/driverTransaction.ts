import type { OutRecord } from '../src/ports/log.js';
import type { Store, StoreOp } from '../src/ports/store.js';
import { partitionId } from '../src/ports/log.js';
import { stateKeys } from '../src/state/stateKeys.js';
import type { LandedOverlay } from './landedOverlay.js';
import type { MemoryLog } from './memoryLog.js';
import { DiscardGate } from '../src/ports/discardGate.js';

/**
 * The open transaction of one engine instance on the driver's exactly-once log, as Kafka's
 * transactional producer holds it: the records produced, the state's changelog writes (landed
 * batches of the staged store) and, at the commit, the input offsets, all committed together or
 * not at all. A crash aborts it (it goes with its instance), and the restarted instance starts
 * with a new one, so nothing of the crashed one becomes visible: that is the fencing.
 *
 * As `src/kafka/log/transactions.ts`: units ({@link unit}) are never split by a commit; a commit waits
 * for the running units to end and holds new ones back until it is done. And as there, it knows
 * which input partitions' work it holds ({@link touched}), so that an abort resets those only, and
 * while it is being thrown away ({@link discard}) units of the other partitions wait for the next.
 */
export class DriverTransaction {
  private draining = false;
  /** The units running now. */
  private readonly running = new Set<Promise<unknown>>();
  private reopened: Promise<void> = Promise.resolve();
  private reopen: (() => void) | undefined;
  private records: OutRecord[] = [];
  private changelog: number[] = [];
  /** Partitions whose units entered the transaction; `all`: a unit or a record named none. */
  private readonly entered = new Set<string>();
  private enteredAll = false;
  /** Shut while a reset throws the transaction away: only units of the partitions dropped enter. */
  private readonly gate = new DiscardGate();

  constructor(
    private readonly overlay: LandedOverlay,
    private readonly state: () => Store,
    private readonly log: MemoryLog,
    private readonly nowMs: () => number,
    /** Hears each state batch the moment a commit makes it durable. */
    private readonly madeDurable: (ops: readonly StoreOp[]) => void,
    /** Hears when the transaction gets its first record or state write. */
    private readonly opened: () => void = () => {},
  ) {}

  /** True when a commit would commit records or state writes (not only offsets). */
  get holdsWrites(): boolean {
    return this.records.length > 0 || this.changelog.length > 0;
  }

  /**
   * Runs `work` inside the transaction: a commit waits for it, and it waits for a commit under
   * way. `partition` (its id) is the input partition whose work it writes; while the transaction
   * is thrown away, only units of the partitions dropped with it enter.
   */
  async unit<T>(work: () => Promise<T>, partition?: string, prunesOnly = false): Promise<T> {
    for (;;) {
      if (this.draining) await this.reopened;
      else {
        const heldBack = this.gate.heldBack(partition);
        if (!heldBack) break;
        await heldBack;
      }
    }
    // A unit that only prunes touches nothing (see AtomicOptions.prunesOnly).
    if (prunesOnly) {
      // nothing to note
    } else if (partition === undefined) this.enteredAll = true;
    else this.entered.add(partition);
    const unit = work();
    this.running.add(unit);
    try {
      return await unit;
    } finally {
      this.running.delete(unit);
    }
  }

  /** Records produced: visible at the commit. */
  send(records: readonly OutRecord[]): void {
    // Outside any unit, nothing says whose work it is.
    if (this.running.size === 0) this.enteredAll = true;
    if (!this.holdsWrites) this.opened();
    this.records.push(...records);
  }

  /** A landed batch whose changelog records are acknowledged into the transaction: durable at the commit. */
  hold(seq: number): void {
    if (!this.holdsWrites) this.opened();
    this.changelog.push(seq);
  }

  /** Holds new units back and settles once the running ones have ended; {@link reopenUnits} lets them in again. */
  async drain(): Promise<void> {
    this.draining = true;
    this.reopened = new Promise((resolve) => (this.reopen = resolve));
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  reopenUnits(): void {
    this.draining = false;
    this.reopen?.();
  }

  /**
   * The input partitions whose work the transaction holds: those whose units entered it (a write
   * is made in a unit, which lasts until it is acknowledged into the transaction, so a partition
   * with a landed write not yet in the transaction is among them); `all` when a unit or a record
   * named none.
   */
  touched(): ReadonlySet<string> | 'all' {
    return this.enteredAll ? 'all' : new Set(this.entered);
  }

  /**
   * As Kafka's log throws a transaction away: units of other partitions wait from now on, then
   * `drop` is called with the partitions touched and the `lost` ones, and again with those touched
   * meanwhile, until none is left. Returns every partition dropped; call {@link abort} with it,
   * then {@link endDiscard}.
   */
  async discard(drop: (partitions: ReadonlySet<string> | 'all') => Promise<void>, lost: ReadonlySet<string>): Promise<ReadonlySet<string> | 'all'> {
    this.gate.close();
    return this.gate.dropTouched(() => this.touched(), drop, lost);
  }

  /** The transaction has been thrown away: the units held back enter the next one. */
  endDiscard(): void {
    this.gate.open();
  }

  /**
   * Throws away what the transaction holds, and the writes the instance landed for the dropped
   * partitions (their local state goes back to the durable one, as a restore from the committed
   * changelog does); a new transaction is open.
   */
  abort(options: { keepLocalState?: boolean; partitions?: ReadonlySet<string> | 'all' } = {}): void {
    this.records = [];
    this.changelog = [];
    this.entered.clear();
    this.enteredAll = false;
    const partitions = options.partitions ?? 'all';
    if (options.keepLocalState) return;
    if (partitions === 'all') this.overlay.clear();
    else this.overlay.clear((key) => partitions.has(partitionId(stateKeys.partitionOf(key))));
  }

  /** Makes what the transaction holds durable and visible, in the order it came; then a new transaction is open. */
  async commit(): Promise<void> {
    for (const seq of this.changelog) {
      const ops = this.overlay.ops(seq);
      await this.state().batch(ops);
      this.overlay.settle(seq);
      this.madeDurable(ops);
    }
    for (const record of this.records) this.log.append(record, this.nowMs());
    this.changelog = [];
    this.records = [];
    this.entered.clear();
    this.enteredAll = false;
  }
}
