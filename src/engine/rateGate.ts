import type { Clock, Timer } from '../ports/clock.js';
import type { CallLimit } from '../graph/nodes.js';
import { AdmissionTimes } from './admissionTimes.js';

/** A call the gate let through: which of its windows it started in, its place there, and when. */
export interface Admission {
  readonly windowStartMs: number;
  /** Calls admitted in the same window before this one. */
  readonly index: number;
  readonly atMs: number;
}

/**
 * Admits the calls of one agent step, engine-wide, because a provider's budget is shared by every
 * partition. First come, first served; a call that was refused goes back to the front.
 *
 * - After a 429 it admits nothing until Retry-After has passed.
 * - With a declared limit it admits at most `calls` in any `windowMs`, so none is refused.
 * - With no declared limit it learns one from the 429s (docs/rate-limits.md). A Retry-After gives
 *   the end of the provider's window, not its length, so the gate opens its next window there. The
 *   length is the time between two such ends: the first refused call of a window that opened at one
 *   ends at the next. The budget is the number of calls admitted before the refused one in the
 *   provider's window, counted from the latest start that window can have, so calls of earlier,
 *   quiet windows are never counted. Until the length is known, a window admits the budget plus
 *   one, then, each time all its calls were answered, 1, 2, 4, ... more, until a 429 ends it. Once
 *   both are known it admits the budget plus one call per window: the one extra call finds out
 *   whether the budget has grown, so at most one call a window is refused, and if none is the
 *   budget grows by one.
 */
export class RateGate {
  private readonly waiting: Array<(admission: Admission) => void> = [];
  private readonly recentStartsMs: number[] = [];
  private blockedUntilMs = 0;
  /** Where the next window opens: the latest provider window end a Retry-After gave. */
  private nextWindowMs = 0;
  private budget: number | undefined;
  private lengthMs: number | undefined;
  /** The shortest the provider's window can be: a refused call was in it until its end. */
  private minLengthMs = 0;
  private budgetFromMs: number | undefined;
  private windowStartMs: number;
  /** Whether the window opened where a provider window ended (the gate's first window did not). */
  private anchored = false;
  private startedInWindow = 0;
  private answeredInWindow = 0;
  private refusedInWindow = false;
  private probeAtMs: number | undefined;
  private probeAccepted = false;
  /** In a window of unknown length: the calls it may start until its calls are answered. */
  private allowance: number | undefined;
  /** The calls the allowance adds once all its calls are answered. */
  private nextRound = 1;
  private readonly admittedAt = new AdmissionTimes();
  private timer: Timer | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly limit?: CallLimit,
  ) {
    this.windowStartMs = clock.now();
  }

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

  /**
   * A call was refused with a 429: no call starts for `retryAfterMs`, and the next window opens
   * where it ends; the admission teaches the budget. A Retry-After of 0 or less came back after its
   * window ended, so its end is not a window's: it teaches nothing.
   */
  rateLimited(retryAfterMs: number, refused?: Admission): void {
    const endMs = this.clock.now() + retryAfterMs;
    this.blockedUntilMs = Math.max(this.blockedUntilMs, endMs);
    if (this.limit) return;
    const ofThisWindow = refused !== undefined && refused.windowStartMs === this.windowStartMs;
    if (ofThisWindow) this.refusedInWindow = true;
    if (retryAfterMs <= 0) {
      // Its window has ended; to an allowance it is an answer, so that the window is not left waiting.
      if (ofThisWindow) this.ended(refused, false);
      return;
    }
    this.nextWindowMs = Math.max(this.nextWindowMs, endMs);
    // A call of a window that has gone by teaches nothing more: that window's record is gone.
    if (ofThisWindow) this.learn(refused, endMs);
  }

  /**
   * A call that was not refused has ended (answered, failed or given up): the budget's extra call
   * was accepted, or, in a window of unknown length, the window may start more.
   */
  answered(admission: Admission): void {
    this.ended(admission, true);
  }

  /**
   * A call given up before it was answered (a stop, a rebalance, a shadow's bound): it has ended,
   * but says nothing of the budget, so a probe given up is not taken as accepted.
   */
  released(admission: Admission): void {
    this.ended(admission, false);
  }

  private ended(admission: Admission, accepted: boolean): void {
    if (this.limit || admission.windowStartMs !== this.windowStartMs) return;
    if (accepted && admission.index === this.budget) this.probeAccepted = true;
    this.answeredInWindow += 1;
    if (this.allowance === undefined || this.answeredInWindow < this.startedInWindow || this.startedInWindow < this.allowance) return;
    // Every call the allowance let through was answered: the next round, each twice the last, until a
    // 429 ends the window and teaches the length.
    this.allowance += this.nextRound;
    this.nextRound *= 2;
    if (this.waiting.length > 0) this.pump();
  }

  /** Calls waiting to start. */
  get queued(): number {
    return this.waiting.length;
  }

  /** The limit learned from 429s, once both the budget and the window's length are known. */
  get learnedLimit(): CallLimit | undefined {
    return this.budget !== undefined && this.lengthMs !== undefined ? { calls: this.budget, windowMs: this.lengthMs } : undefined;
  }

  /** The budget learned from 429s, if any, known or not the window's length. */
  get learnedBudget(): number | undefined {
    return this.budget;
  }

  /**
   * Learns from the first refused call of this window. If the window opened where a provider window
   * ended, the provider's window is `spanMs / k` long for some whole k, and it holds the refused call
   * until `endMs`: the shortest such length gives the latest start it can have, and counting calls
   * from there never counts one of an earlier window. The span itself is a whole number of provider
   * windows: the length, until a refusal early in a window shortens it to one. The gate's first
   * window opened anywhere, so it teaches no length, and its calls are counted as if the provider's
   * windows were laid out from the clock's zero: exact when they are (fixed windows on the minute),
   * and, on a clock far from its zero, little more than the calls of the refused call's own time.
   */
  private learn(refused: Admission, endMs: number): void {
    this.minLengthMs = Math.max(this.minLengthMs, endMs - refused.atMs);
    const spanMs = endMs - (this.anchored ? this.windowStartMs : 0);
    const k = Math.max(1, Math.floor(spanMs / Math.max(1, endMs - refused.atMs)));
    const calls = Math.max(1, this.admittedAt.countFrom(endMs - spanMs / k, refused.index));
    // Of the calls refused in one window, the first refused is the one past the budget, and the earliest end is the window's.
    const sameWindow = this.budgetFromMs === this.windowStartMs;
    this.budget = sameWindow && this.budget !== undefined ? Math.min(this.budget, calls) : calls;
    if (this.anchored) this.lengthMs = sameWindow && this.lengthMs !== undefined ? Math.min(this.lengthMs, spanMs) : spanMs;
    this.budgetFromMs = this.windowStartMs;
  }

  private pump(): void {
    while (this.waiting.length > 0) {
      const nowMs = this.clock.now();
      this.rollWindow(nowMs);
      const waitMs = this.waitMs(nowMs);
      if (waitMs > 0) {
        // Waiting for answers, not for time: `answered` pumps again.
        if (waitMs !== Infinity) this.wakeIn(waitMs);
        return;
      }
      this.waiting.shift()!(this.start(nowMs));
    }
  }

  /** Starts a new window where a Retry-After ended, or where the learned window ends. */
  private rollWindow(nowMs: number): void {
    if (this.nextWindowMs > this.windowStartMs && nowMs >= this.nextWindowMs) {
      this.openWindow(this.nextWindowMs);
    } else if (this.budget !== undefined && this.lengthMs !== undefined && nowMs >= this.windowStartMs + this.lengthMs) {
      // The extra call was accepted, no call was refused, and all of them surely fell in one provider window: the provider allows more.
      if (this.grew()) this.budget += 1;
      const elapsed = Math.floor((nowMs - this.windowStartMs) / this.lengthMs);
      this.openWindow(this.windowStartMs + elapsed * this.lengthMs);
    }
  }

  private grew(): boolean {
    if (this.refusedInWindow || !this.probeAccepted) return false;
    return this.probeAtMs !== undefined && this.probeAtMs < this.windowStartMs + this.minLengthMs;
  }

  /** Opens a window at a provider window's end (a Retry-After's, or one the learned length puts there). */
  private openWindow(startMs: number): void {
    this.windowStartMs = startMs;
    this.anchored = true;
    this.startedInWindow = 0;
    this.answeredInWindow = 0;
    this.refusedInWindow = false;
    this.probeAtMs = undefined;
    this.probeAccepted = false;
    this.admittedAt.clear();
    // A budget but no length yet: the budget plus one, then 1, 2, 4, ... more.
    this.allowance = this.budget !== undefined && this.lengthMs === undefined ? this.budget + 1 : undefined;
    this.nextRound = 1;
  }

  private start(nowMs: number): Admission {
    const admission = { windowStartMs: this.windowStartMs, index: this.startedInWindow++, atMs: nowMs };
    if (this.limit) {
      this.recentStartsMs.push(nowMs);
      if (this.recentStartsMs.length > this.limit.calls) this.recentStartsMs.shift();
      return admission;
    }
    this.admittedAt.add(nowMs, admission.index);
    if (admission.index === this.budget) this.probeAtMs = nowMs;
    return admission;
  }

  /** How long until the next call may start; Infinity: until the window's calls are answered. */
  private waitMs(nowMs: number): number {
    const blocked = Math.max(0, this.blockedUntilMs - nowMs);
    if (this.limit) {
      // The declared window is full: the oldest of the last `calls` starts must leave it first.
      const full = this.recentStartsMs.length >= this.limit.calls;
      return Math.max(blocked, full ? this.recentStartsMs[0]! + this.limit.windowMs - nowMs : 0);
    }
    if (blocked > 0) return blocked;
    if (this.allowance !== undefined && this.startedInWindow >= this.allowance) return Infinity;
    if (this.budget !== undefined && this.lengthMs !== undefined && this.startedInWindow > this.budget) {
      return Math.max(0, this.windowStartMs + this.lengthMs - nowMs);
    }
    return 0;
  }

  private wakeIn(delayMs: number): void {
    this.timer?.cancel();
    this.timer = this.clock.setTimer(delayMs, () => {
      this.timer = undefined;
      this.pump();
    });
  }
}
