import type { Clock, Timer } from '../ports/clock.js';
import type { RateLimit } from '../graph/nodes.js';

/** A call the gate let through: which of the provider's windows it started in, and its place there. */
export interface Admission {
  readonly windowStartMs: number;
  /** Calls admitted in the same window before this one. */
  readonly index: number;
  /** When it was admitted. */
  readonly atMs: number;
}

/** How many distinct admission times a window remembers; past it the oldest go, and a budget counted from them comes out lower (never higher). */
const ADMISSION_TIMES_KEPT = 4_096;

/**
 * Admits the calls of one agent step, engine-wide, because a provider's budget is shared by every
 * partition. First come, first served; a call that was refused goes back to the front.
 *
 * - After a 429 it admits nothing until Retry-After has passed.
 * - With a declared limit it admits at most `calls` in any `windowMs`, so none is refused.
 * - With no declared limit it learns one from the 429s. A Retry-After marks where the provider's
 *   window ends, not how long it is. The gate's own window starts at a window end it knows (its
 *   start, or where an earlier Retry-After ended), so the time from there to the new end is a whole
 *   number of provider windows: that is the learned length, and a later refusal shortens it to one
 *   window. The budget is the number of calls admitted before the refused one in the provider's
 *   window, counted from the latest start that window can have (the shortest whole fraction of that
 *   time that still holds the refused call), so calls of quiet windows before a burst are not counted.
 *   From then on it admits the budget plus one call per window: the one extra call finds out whether
 *   the budget has grown, so at most one call a window is refused, and if none is the budget grows
 *   by one. docs/rate-limits.md argues the rule.
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
  /** Distinct admission times of the window, ascending, and the index of the first call admitted at each. */
  private readonly admittedAtMs: number[] = [];
  private readonly firstIndexAt: number[] = [];
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
    // A call of a window that has gone by teaches nothing more: its window's record is gone.
    if (!refused || this.limit || refused.windowStartMs !== this.windowStartMs) return;
    this.refusedInWindow = true;
    const windowMs = Math.max(1, endMs - refused.windowStartMs);
    const calls = Math.max(1, this.callsInProviderWindow(refused, endMs, windowMs));
    // Of the calls refused in one window, the first refused is the one past the budget, and the earliest end is the window's.
    const sameWindow = this.learnedFromMs === refused.windowStartMs && this.learned;
    this.learned = sameWindow ? { calls: Math.min(sameWindow.calls, calls), windowMs: Math.min(sameWindow.windowMs, windowMs) } : { calls, windowMs };
    this.learnedFromMs = refused.windowStartMs;
  }

  /**
   * The calls admitted before `refused` in the provider's window that ends at `endMs`. The gate's
   * window began `spanMs` before that end, at a window end, so the provider's window is `spanMs / k`
   * long for some whole k, and holds the refused call: it is at least `endMs - refused.atMs` long.
   * The shortest such length gives the latest start the window can have; counting from there never
   * counts a call of an earlier window, so the budget is never over-estimated.
   */
  private callsInProviderWindow(refused: Admission, endMs: number, spanMs: number): number {
    const k = Math.max(1, Math.floor(spanMs / Math.max(1, endMs - refused.atMs)));
    const fromMs = endMs - spanMs / k;
    return refused.index - this.firstIndexFrom(fromMs, refused.index);
  }

  /** The index of the first call of this window admitted at or after `fromMs` (`otherwise` if none is remembered). */
  private firstIndexFrom(fromMs: number, otherwise: number): number {
    let lo = 0;
    let hi = this.admittedAtMs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.admittedAtMs[mid]! < fromMs) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.firstIndexAt.length ? this.firstIndexAt[lo]! : otherwise;
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
    this.admittedAtMs.length = 0;
    this.firstIndexAt.length = 0;
  }

  private start(nowMs: number): Admission {
    const admission = { windowStartMs: this.windowStartMs, index: this.startedInWindow++, atMs: nowMs };
    if (this.limit) {
      this.recentStartsMs.push(nowMs);
      if (this.recentStartsMs.length > this.limit.calls) this.recentStartsMs.shift();
    } else if (this.admittedAtMs.at(-1) !== nowMs) {
      this.admittedAtMs.push(nowMs);
      this.firstIndexAt.push(admission.index);
      if (this.admittedAtMs.length > ADMISSION_TIMES_KEPT) {
        this.admittedAtMs.shift();
        this.firstIndexAt.shift();
      }
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
