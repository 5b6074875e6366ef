import type { OutRecord } from '../src/ports/log.js';
import type { Store, StoreOp } from '../src/ports/store.js';

/**
 * The open transaction of one engine instance over the driver's log, when the driver runs with
 * `exactlyOnce` (as Kafka does with `--exactly-once`): what the instance produces and writes to
 * its state from one commit to the next becomes visible at the commit, with its offsets, or not
 * at all. A crash aborts it: its records are never appended and its state writes are rolled back,
 * as a restarted Kafka worker rebuilds its state from the read_committed changelog.
 *
 * Units ({@link Log.atomic}) are never split by a commit: a commit waits until no unit runs, and
 * new units wait for the commit, as `src/kafka/transactions.ts` does on Kafka.
 */
export class DriverTransaction {
  private records: OutRecord[] = [];
  /** Ops that restore what the transaction's writes replaced, oldest first. */
  private undo: StoreOp[] = [];
  private writes: StoreOp[][] = [];
  private running = 0;
  private drained: (() => void) | undefined;
  private committing: Promise<void> | undefined;

  /** Runs `work` as one unit: no commit falls inside it. */
  async unit<T>(work: () => Promise<T>): Promise<T> {
    while (this.committing) await this.committing;
    this.running += 1;
    try {
      return await work();
    } finally {
      this.running -= 1;
      if (this.running === 0) this.drained?.();
    }
  }

  /** Runs `commit` once no unit runs; new units wait until it settles. */
  async commit(commit: () => Promise<void>): Promise<void> {
    while (this.committing) await this.committing;
    const done = (async () => {
      if (this.running > 0) await new Promise<void>((resolve) => (this.drained = resolve));
      this.drained = undefined;
      await commit();
    })();
    const settled = done.then(
      () => undefined,
      () => undefined,
    );
    this.committing = settled;
    void settled.then(() => {
      if (this.committing === settled) this.committing = undefined;
    });
    return done;
  }

  /** A record produced in the transaction: appended at its commit. */
  produced(records: readonly OutRecord[]): void {
    this.records.push(...records);
  }

  /** A batch about to be written to `state` in the transaction: notes what it replaces. */
  writing(ops: readonly StoreOp[], state: Store): void {
    for (const op of ops) {
      const before = state.get<unknown>(op.key);
      this.undo.push(before === undefined ? { type: 'del', key: op.key } : { type: 'put', key: op.key, value: before });
    }
    this.writes.push([...ops]);
  }

  /** The commit landed: hands over its records and forgets its writes. */
  committed(): OutRecord[] {
    const records = this.records;
    this.records = [];
    this.undo = [];
    this.writes = [];
    return records;
  }

  /** The transaction is aborted: its records are dropped; returns the ops that roll its writes back, and the writes. */
  abort(): { rollback: StoreOp[]; writes: StoreOp[][] } {
    const aborted = { rollback: [...this.undo].reverse(), writes: this.writes };
    this.records = [];
    this.undo = [];
    this.writes = [];
    return aborted;
  }
}
