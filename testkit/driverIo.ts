import type { IoRequest } from './crashPoints.js';

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
  private readonly fenced = new Set<string>();

  enqueue<T>(owner: string, request: IoRequest, execute: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // A crashed instance's requests never run and never settle: its work in flight must not land.
      if (this.fenced.has(owner)) return;
      this.queue.push({
        owner,
        request,
        execute,
        settle: (outcome) => (outcome.ok ? resolve(outcome.value as T) : reject(outcome.error)),
      });
    });
  }

  next(): PendingIo | undefined {
    return this.queue.shift();
  }

  /** Drops an instance's waiting requests and refuses its next ones. */
  fence(owner: string): void {
    this.fenced.add(owner);
    for (let i = this.queue.length - 1; i >= 0; i--) if (this.queue[i]!.owner === owner) this.queue.splice(i, 1);
  }
}
