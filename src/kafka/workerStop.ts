import type { Logger } from 'pino';
import type { Engine, StopOptions } from '../engine/engine.js';
import type { Store } from '../ports/store.js';
import { closeState } from './changelog/workerState.js';
import type { Resolutions } from './parked/resolutions.js';
import type { RateLimitWatch } from './rateLimitWarnings.js';

/** What a stop ends, in this order. */
export interface RunningParts {
  readonly rateLimits: RateLimitWatch;
  readonly engine: Engine;
  readonly store: Store;
}

/**
 * How a worker stops, once: the rate-limit watch, the resolutions, the engine (which finishes,
 * commits and closes the log), then the state. `done` settles after it, rejecting with the first
 * fatal error.
 */
export class WorkerStop {
  /** See {@link RunningTopology.done}. */
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private rejectDone!: (error: Error) => void;
  private stopped: Promise<void> | undefined;
  private failure: Error | undefined;
  private parts: RunningParts | undefined;
  private resolutions: Resolutions | undefined;

  constructor(private readonly logger: Logger) {
    this.done = new Promise<void>((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    // A caller that only awaits stop() must not see an unhandled rejection.
    this.done.catch(() => undefined);
  }

  /** True once a stop has begun: asked for, or after a fatal error. */
  get stopping(): boolean {
    return this.stopped !== undefined;
  }

  /** The parts a stop ends, as soon as the engine exists (a fatal error may stop it while it starts). */
  running(parts: RunningParts): void {
    this.parts = parts;
  }

  /** The resolutions of parked keys, once started; a stop begun before does not stop them. */
  serving(resolutions: Resolutions): void {
    this.resolutions = resolutions;
  }

  /** Stops the worker, with `error` as the cause of a fatal stop. Idempotent: later calls return the first one's promise. */
  stop(error?: Error, graceMs = 0): Promise<void> {
    if (error && !this.failure) this.failure = error;
    this.stopped ??= this.stopParts(graceMs);
    return this.stopped;
  }

  /** {@link RunningTopology.stop}: the grace is checked before anything stops, so a bad one leaves no half-stopped worker. */
  stopAsked(options: StopOptions = {}): Promise<void> {
    const graceMs = options.graceMs ?? 0;
    if (!Number.isFinite(graceMs) || graceMs < 0) return Promise.reject(new RangeError(`stop: graceMs must be 0 or more milliseconds, got ${graceMs}`));
    return this.stop(undefined, graceMs);
  }

  private async stopParts(graceMs: number): Promise<void> {
    const parts = this.parts;
    if (!parts) throw new Error('runTopology: the worker stopped before its engine was built; this is a bug in orderly');
    parts.rateLimits.stop();
    try {
      await this.resolutions?.stop();
      await parts.engine.stop({ graceMs });
    } catch (stopError) {
      this.failure ??= stopError as Error;
    }
    await closeState(parts.store, this.logger);
    this.logger.info({ metrics: parts.engine.metrics() }, this.failure ? 'worker stopped after a fatal error' : 'worker stopped');
    if (this.failure) this.rejectDone(this.failure);
    else this.resolveDone();
  }
}
