import type { Logger } from 'pino';
import type { Engine, StopOptions } from '../engine/engine.js';
import type { Store } from '../ports/store.js';
import { closeState } from './changelog/workerState.js';
import type { Resolutions } from './parked/resolutions.js';
import type { RateLimitWatch } from './rateLimitWarnings.js';

/** A stop still running after this long is logged, then as often again, with the part it waits for. */
export const SLOW_STOP_MS = 10_000;

/** What each part of a stop waits for, as the warning of a slow stop names it. */
const STOP_WAITS_FOR = {
  resolutions: "the resolutions of parked keys: their reader's last poll and a resolution being applied",
  engine: 'the engine: its work in flight (until the grace ends), its last commit and the close of its log (leaving the group)',
  state: 'the state store: its checkpoints and its close',
} as const;

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
    let part: keyof typeof STOP_WAITS_FOR = 'resolutions';
    const started = Date.now();
    // A stop that hangs says where: the operator (and a test's last log lines) see the part it waits for.
    const timer = setInterval(() => {
      const waitedMs = Date.now() - started;
      const within = waitedMs <= graceMs ? ` (within its grace of ${Math.round(graceMs / 1_000)} s)` : '';
      // Inside the grace the work in flight may take its time: worth an info line, not a warning.
      this.logger[within ? 'info' : 'warn'](
        { part, waitedMs, graceMs, inFlight: parts.engine.inFlight },
        `stop still running after ${Math.round(waitedMs / 1_000)} s${within}: it waits for ${STOP_WAITS_FOR[part]}`,
      );
    }, SLOW_STOP_MS);
    timer.unref();
    try {
      try {
        // The engine's stop begins first: from the signal on it starts no new work. Waiting for the
        // resolutions to close first let a call that ended meanwhile resume a paused partition,
        // whose next event then ran into the stop and held it for its whole grace.
        const engineStopped = parts.engine.stop({ graceMs });
        engineStopped.catch(() => undefined);
        await this.resolutions?.stop();
        part = 'engine';
        await engineStopped;
      } catch (stopError) {
        this.failure ??= stopError as Error;
      }
      part = 'state';
      await closeState(parts.store, this.logger);
    } finally {
      clearInterval(timer);
    }
    this.logger.info({ metrics: parts.engine.metrics() }, this.failure ? 'worker stopped after a fatal error' : 'worker stopped');
    if (this.failure) this.rejectDone(this.failure);
    else this.resolveDone();
  }
}
