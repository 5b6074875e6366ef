import type { Clock, Timer } from '../ports/clock.js';
import type { RateLimit } from '../graph/nodes.js';

/** A call the gate let through: which of the provider's windows it started in, and its place there. */
export interface Admission {
  readonly windowStartMs: number;
  /** Calls admitted in the same window before this one. */
  readonly index: number;
}

/**
 * Admits the calls of one agent step, engine-wide, because a provider's budget is shared by every
 * partition. First come, first served; a call that was refused goes back to the front.
 *
 * - After a 429 it admits nothing until Retry-After has passed.
 * - With a declared limit it admits at most `calls` in any `windowMs`, so none is refused.
 * - With no declared limit it learns one from the 429s: the refused call's place in its window is
 *   the budget, and Retry-After marks where the provider's window ends. From then on it admits the
 *   budget plus one call per window: the one extra call finds out whether the budget has grown, so
 *   at most one call a window is refused, and if none is the budget grows by one.
 */
export class RateGate {
  private readonly waiting: Array<(admission: Admission) => void> = [];
  private readonly recentStartsMs: number[] = [];
  private blockedUntilMs = 0;
  private learned: RateLimit | undefined;
  private learnedFromMs = -1;
  private windowStartMs = 0;
  private startedInWindow = 0;
  private refusedInWindow = false;
  private timer: Timer | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly limit?: RateLimit,
  ) {}

  /**
   * Admits a call at once if nothing waits ahead of it and the gate is open: what `admit` would
   * resolve with, without a promise (most calls of an unthrottled step). Undefined: use `admit`.
   */
  tryAdmit(): Admission | undefined {
    if (this.waiting.length > 0) return undefined;
    const nowMs = this.clock.now();
    this.rollWindow(nowMs);
    return this.waitMs(nowMs) > 0 ? undefined : this.start(nowMs);
  }

  /**
   * Resolves when a call may start now; the call is counted as started. Rejects with the signal's
   * reason if it is aborted first: the call leaves the queue, uncounted.
   */
  admit(options: { front?: boolean; signal?: AbortSignal } = {}): Promise<Admission> {
    const { signal } = options;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        const at = this.waiting.indexOf(admitted);
        if (at >= 0) this.waiting.splice(at, 1);
        if (this.waiting.length === 0) {
          // Nothing left to wake for: a pending Retry-After timer must not hold a stopping process.
          this.timer?.cancel();
          this.timer = undefined;
        }
        reject(signal!.reason);
      };
      const admitted = (admission: Admission) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(admission);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (options.front) this.waiting.unshift(admitted);
      else this.waiting.push(admitted);
      this.pump();
    });
  }

  /** A call was refused with a 429: no call starts for `retryAfterMs`; the admission teaches the budget. */
  rateLimited(retryAfterMs: number, refused?: Admission): void {
    const endMs = this.clock.now() + retryAfterMs;
    this.blockedUntilMs = Math.max(this.blockedUntilMs, endMs);
    if (!refused || this.limit) return;
    if (refused.windowStartMs === this.windowStartMs) this.refusedInWindow = true;
    // Of the calls refused in one window, the first refused is the one past the budget.
    const sameWindow = this.learnedFromMs === refused.windowStartMs && this.learned;
    const calls = Math.max(1, sameWindow ? Math.min(sameWindow.calls, refused.index) : refused.index);
    this.learned = { calls, windowMs: Math.max(1, endMs - refused.windowStartMs) };
    this.learnedFromMs = refused.windowStartMs;
  }

  /** Calls waiting to start. */
  get queued(): number {
    return this.waiting.length;
  }

  /** The budget learned from 429s, if any. */
  get learnedLimit(): RateLimit | undefined {
    return this.learned;
  }

  private pump(): void {
    while (this.waiting.length > 0) {
      const nowMs = this.clock.now();
      this.rollWindow(nowMs);
      const waitMs = this.waitMs(nowMs);
      if (waitMs > 0) {
        this.wakeIn(waitMs);
        return;
      }
      this.waiting.shift()!(this.start(nowMs));
    }
  }

  /** Starts a new window where a Retry-After ended, or where the learned window ends. */
  private rollWindow(nowMs: number): void {
    if (this.blockedUntilMs > this.windowStartMs && nowMs >= this.blockedUntilMs) {
      this.openWindow(this.blockedUntilMs);
    } else if (this.learned && nowMs >= this.windowStartMs + this.learned.windowMs) {
      // No call was refused in a full window: the provider may allow more now.
      if (!this.refusedInWindow && this.startedInWindow > this.learned.calls) this.learned = { ...this.learned, calls: this.learned.calls + 1 };
      const elapsed = Math.floor((nowMs - this.windowStartMs) / this.learned.windowMs);
      this.openWindow(this.windowStartMs + elapsed * this.learned.windowMs);
    }
  }

  private openWindow(startMs: number): void {
    this.windowStartMs = startMs;
    this.startedInWindow = 0;
    this.refusedInWindow = false;
  }

  private start(nowMs: number): Admission {
    const admission = { windowStartMs: this.windowStartMs, index: this.startedInWindow++ };
    if (this.limit) {
      this.recentStartsMs.push(nowMs);
      if (this.recentStartsMs.length > this.limit.calls) this.recentStartsMs.shift();
    }
    return admission;
  }

  /** How long until the next call may start. */
  private waitMs(nowMs: number): number {
    const blocked = this.blockedUntilMs - nowMs;
    if (this.limit) {
      // The declared window is full: the oldest of the last `calls` starts must leave it first.
      const full = this.recentStartsMs.length >= this.limit.calls;
      return Math.max(0, blocked, full ? this.recentStartsMs[0]! + this.limit.windowMs - nowMs : 0);
    }
    if (this.learned && this.startedInWindow > this.learned.calls) {
      return Math.max(0, blocked, this.windowStartMs + this.learned.windowMs - nowMs);
    }
    return Math.max(0, blocked);
  }

  private wakeIn(delayMs: number): void {
    this.timer?.cancel();
    this.timer = this.clock.setTimer(delayMs, () => {
      this.timer = undefined;
      this.pump();
    });
  }
}
