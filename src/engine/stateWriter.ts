import type { Store, StoreOp } from '../ports/store.js';

/** The batch that gathers writes now, and the one promise all its writers wait on. */
interface Gathering {
  readonly done: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Writes the engine's state in group commits: while one batch is being written, the ops of every
 * event that finishes meanwhile gather into the next. Each event's ops land in one atomic batch,
 * and batches land in the order they were asked for.
 */
export class StateWriter {
  private queued: StoreOp[] = [];
  private gathering: Gathering | undefined;
  private writing = false;

  constructor(private readonly store: Store) {}

  /** Settles when `ops` are durable, all of them or none. */
  write(ops: readonly StoreOp[]): Promise<void> {
    for (const op of ops) this.queued.push(op);
    // Every write of one batch shares its promise: one allocation per batch, not per event.
    const gathering = (this.gathering ??= gather());
    if (!this.writing) void this.flush();
    return gathering.done;
  }

  private async flush(): Promise<void> {
    this.writing = true;
    while (this.gathering) {
      const ops = this.queued;
      const batch = this.gathering;
      this.queued = [];
      this.gathering = undefined;
      try {
        await this.store.batch(ops);
        batch.resolve();
      } catch (error) {
        batch.reject(error);
      }
    }
    this.writing = false;
  }
}

function gather(): Gathering {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { done, resolve, reject };
}
