import type { IoRequest } from './crashPoints.js';
import type { SeededRandom } from './seededRandom.js';

/**
 * Where an operation waits. `main`: every operation the engine asks for, run in request order;
 * `acks`: the acknowledgements that make a staged store's landed batches durable, in their own
 * order, which may come before or after later operations of `main` (as Kafka's acknowledgements
 * of changelog records come while the consumer commits and produces).
 */
export type IoLane = 'main' | 'acks';

/** One asynchronous port operation of an engine instance, waiting for the driver to run it. */
export interface PendingIo {
  readonly owner: string;
  readonly request: IoRequest;
  readonly execute: () => Promise<unknown>;
  readonly settle: (outcome: { ok: true; value: unknown } | { ok: false; error: unknown }) => void;
}

/**
 * The queue of every asynchronous port operation (store batches and scans, produces, commits).
 * The driver runs them one at a time, in the order they were asked for, and lets the engine's
 * continuation run to quiescence before the next: that is what makes a run with real LevelDB as
 * deterministic as one in memory, and what lets a crash fall between any two of them.
 */
export class DriverIo {
  private readonly queue: PendingIo[] = [];
  private readonly acks: PendingIo[] = [];
  private readonly fenced = new Set<string>();

  /**
   * `random` chooses between the lanes when both have an operation waiting: an acknowledgement one
   * time in four, so that acknowledgements lag behind the other operations, as Kafka's take longer
   * than a local write.
   */
  constructor(private readonly random?: SeededRandom) {}

  enqueue<T>(owner: string, request: IoRequest, execute: () => Promise<T>, lane: IoLane = 'main'): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // A crashed instance's requests never run and never settle: its work in flight must not land.
      if (this.fenced.has(owner)) return;
      (lane === 'acks' ? this.acks : this.queue).push({
        owner,
        request,
        execute,
        settle: (outcome) => (outcome.ok ? resolve(outcome.value as T) : reject(outcome.error)),
      });
    });
  }

  next(): PendingIo | undefined {
    if (this.acks.length === 0) return this.queue.shift();
    if (this.queue.length === 0 || !this.random || this.random.next() < 0.25) return this.acks.shift();
    return this.queue.shift();
  }

  /** Drops an instance's waiting requests and refuses its next ones. */
  fence(owner: string): void {
    this.fenced.add(owner);
    for (const queue of [this.queue, this.acks]) {
      for (let i = queue.length - 1; i >= 0; i--) if (queue[i]!.owner === owner) queue.splice(i, 1);
    }
  }
}
