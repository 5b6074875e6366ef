import type { OutRecord } from '../src/ports/log.js';
import type { Store, StoreOp } from '../src/ports/store.js';
import type { LandedOverlay } from './landedOverlay.js';
import type { MemoryLog } from './memoryLog.js';

/**
 * The open transaction of one engine instance on the driver's exactly-once log, as Kafka's
 * transactional producer holds it: the records produced, the state's changelog writes (landed
 * batches of the staged store) and, at the commit, the input offsets, all committed together or
 * not at all. A crash aborts it (it goes with its instance), and the restarted instance starts
 * with a new one, so nothing of the crashed one becomes visible: that is the fencing.
 *
 * As `src/kafka/log/transactions.ts`: units ({@link unit}) are never split by a commit; a commit waits
 * for the running units to end and holds new ones back until it is done.
 */
export class DriverTransaction {
  private draining = false;
  /** The units running now. */
  private readonly running = new Set<Promise<unknown>>();
  private reopened: Promise<void> = Promise.resolve();
  private reopen: (() => void) | undefined;
  private records: OutRecord[] = [];
  private changelog: number[] = [];

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

  /** Runs `work` inside the transaction: a commit waits for it, and it waits for a commit under way. */
  async unit<T>(work: () => Promise<T>): Promise<T> {
    while (this.draining) await this.reopened;
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
   * Throws away what the transaction holds, and every write the instance landed (its local state
   * goes back to the durable one, as a restore from the committed changelog does); a new
   * transaction is open.
   */
  abort(options: { keepLocalState?: boolean } = {}): void {
    this.records = [];
    this.changelog = [];
    if (!options.keepLocalState) this.overlay.clear();
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
  }
}
