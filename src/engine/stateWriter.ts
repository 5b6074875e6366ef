import type { Store, StoreOp } from '../ports/store.js';

/**
 * Writes the engine's state in group commits: while one batch is being written, the ops of every
 * event that finishes meanwhile gather into the next. Each event's ops land in one atomic batch,
 * and batches land in the order they were asked for.
 */
export class StateWriter {
  private queued: StoreOp[] = [];
  private waiters: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  private writing = false;

  constructor(private readonly store: Store) {}

  /** Settles when `ops` are durable, all of them or none. */
  write(ops: readonly StoreOp[]): Promise<void> {
    return new Promise((resolve, reject) => {
      for (const op of ops) this.queued.push(op);
      this.waiters.push({ resolve, reject });
      if (!this.writing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.writing = true;
    while (this.waiters.length > 0) {
      const ops = this.queued;
      const waiters = this.waiters;
      this.queued = [];
      this.waiters = [];
      try {
        await this.store.batch(ops);
        for (const w of waiters) w.resolve();
      } catch (error) {
        for (const w of waiters) w.reject(error);
      }
    }
    this.writing = false;
  }
}
