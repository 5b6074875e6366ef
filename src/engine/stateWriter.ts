import type { StagedBatch, Store, StoreOp } from '../ports/store.js';

/** A promise and the functions that settle it. */
interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

/** The batch that gathers writes now: the promises all its writers wait on. */
interface Gathering {
  /** Settles when the batch is durable. */
  readonly done: Deferred;
  /** Settles when the batch has landed (a staged store), else with `done`. */
  readonly landed: Deferred;
}

/**
 * Writes the engine's state in group commits: while one batch is being written, the ops of every
 * event that finishes meanwhile gather into the next. Each event's ops land in one atomic batch,
 * and batches land in the order they were asked for.
 *
 * With a store that stages its batches ({@link Store.stage}: the changelog store), the writes are
 * pipelined: the next batch is written locally as soon as the previous one has landed, while the
 * previous one is still being made durable (its changelog records acknowledged). A write still
 * becomes durable only once its own batch is, and the writers learn of their batches in order:
 * when a write settles, every earlier batch has settled too.
 */
export class StateWriter {
  private queued: StoreOp[] = [];
  private gathering: Gathering | undefined;
  private writing = false;
  /** Settles once every staged batch so far has settled its writers. */
  private settled: Promise<void> = Promise.resolve();

  constructor(private readonly store: Store) {}

  /** True when the store stages its batches: a write lands (see {@link stage}) before it is durable. */
  get pipelined(): boolean {
    return this.store.stage !== undefined;
  }

  /** Settles when `ops` are durable, all of them or none. */
  write(ops: readonly StoreOp[]): Promise<void> {
    return this.enqueue(ops).done.promise;
  }

  /**
   * Writes `ops` like {@link write}, in two steps: `landed` settles once they are applied locally
   * (after every earlier write) and what makes them durable has been started in order (for the
   * changelog store: their records are handed to the producer); `durable` settles as `write`
   * does. With a store that does not stage, both settle together, when the ops are durable.
   * A failure rejects both; neither counts as unhandled if the caller leaves `durable` alone.
   */
  stage(ops: readonly StoreOp[]): StagedBatch {
    const { done, landed } = this.enqueue(ops);
    return { landed: landed.promise, durable: done.promise };
  }

  private enqueue(ops: readonly StoreOp[]): Gathering {
    for (const op of ops) this.queued.push(op);
    // Every write of one batch shares its promises: allocations per batch, not per event.
    const gathering = (this.gathering ??= this.gather());
    if (!this.writing) void this.flush();
    return gathering;
  }

  private gather(): Gathering {
    const done = deferred();
    if (!this.pipelined) return { done, landed: done };
    // A caller that gave up at `landed` never awaits `done`: its rejection must not be unhandled.
    done.promise.catch(() => undefined);
    return { done, landed: deferred() };
  }

  private async flush(): Promise<void> {
    this.writing = true;
    while (this.gathering) {
      const ops = this.queued;
      const batch = this.gathering;
      this.queued = [];
      this.gathering = undefined;
      if (this.store.stage) {
        await this.stageBatch(ops, batch);
        continue;
      }
      try {
        await this.store.batch(ops);
        batch.done.resolve();
      } catch (error) {
        batch.done.reject(error);
      }
    }
    this.writing = false;
  }

  /** Stages one batch, settles its writers after the earlier batches' and its own durability, and returns once it has landed. */
  private async stageBatch(ops: StoreOp[], batch: Gathering): Promise<void> {
    let staged: StagedBatch;
    try {
      staged = this.store.stage!(ops);
    } catch (error) {
      staged = { landed: Promise.reject(error), durable: Promise.reject(error) };
    }
    const durable = staged.durable;
    // Handled now: it may fail while an earlier batch is still in flight, before the chain reaches it.
    durable.catch(() => undefined);
    this.settled = this.settled.then(() => durable).then(batch.done.resolve, batch.done.reject);
    // Only the order of the local writes waits here; a failure reaches the writers through `durable` too.
    await staged.landed.then(batch.landed.resolve, (error: unknown) => {
      batch.landed.promise.catch(() => undefined);
      batch.landed.reject(error);
    });
  }
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
