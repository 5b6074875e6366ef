import type { StagedBatch, Store, StoreOp } from '../ports/store.js';

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
 *
 * With a store that stages its batches ({@link Store.stage}: the changelog store), the writes are
 * pipelined: the next batch is written locally as soon as the previous one has landed, while the
 * previous one is still being made durable (its changelog records acknowledged). A write still
 * resolves only once its own batch is durable, and the writers learn of their batches in order:
 * when a write settles, every earlier batch has settled too.
 */
export class StateWriter {
  private queued: StoreOp[] = [];
  private gathering: Gathering | undefined;
  private writing = false;
  /** Settles once every staged batch so far has settled its writers. */
  private settled: Promise<void> = Promise.resolve();

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
      if (this.store.stage) {
        await this.stage(ops, batch);
        continue;
      }
      try {
        await this.store.batch(ops);
        batch.resolve();
      } catch (error) {
        batch.reject(error);
      }
    }
    this.writing = false;
  }

  /** Stages one batch, settles its writers after the earlier batches' and its own durability, and returns once it has landed. */
  private async stage(ops: StoreOp[], batch: Gathering): Promise<void> {
    let staged: StagedBatch;
    try {
      staged = this.store.stage!(ops);
    } catch (error) {
      staged = { landed: Promise.reject(error), durable: Promise.reject(error) };
    }
    const durable = staged.durable;
    // Handled now: it may fail while an earlier batch is still in flight, before the chain reaches it.
    durable.catch(() => undefined);
    this.settled = this.settled.then(() => durable).then(batch.resolve, batch.reject);
    // Only the order of the local writes waits here; a failure reaches the writers through `durable`.
    await staged.landed.catch(() => undefined);
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
