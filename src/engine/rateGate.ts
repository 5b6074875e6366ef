import type { Clock, Timer } from '../ports/clock.js';
import type { RateLimit } from '../graph/nodes.js';

/**
 * Admits the calls of one agent step, engine-wide, because a provider's budget is shared by every
 * partition. After a 429 it admits nothing until Retry-After has passed; with a declared limit it
 * admits at most `calls` in any `windowMs`, so none is refused. Waiters are admitted first come,
 * first served; a call that was refused goes back to the front.
 */
export class RateGate {
  private readonly waiting: Array<() => void> = [];
  private readonly recentStartsMs: number[] = [];
  private blockedUntilMs = 0;
  private timer: Timer | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly limit?: RateLimit,
  ) {}

  /** Resolves when a call may start now; the call is counted as started. */
  admit(options: { front?: boolean } = {}): Promise<void> {
    return new Promise((resolve) => {
      if (options.front) this.waiting.unshift(resolve);
      else this.waiting.push(resolve);
      this.pump();
    });
  }

  /** A call was refused with a 429: no call starts for `retryAfterMs`. */
  rateLimited(retryAfterMs: number): void {
    this.blockedUntilMs = Math.max(this.blockedUntilMs, this.clock.now() + retryAfterMs);
  }

  /** Calls waiting to start. */
  get queued(): number {
    return this.waiting.length;
  }

  private pump(): void {
    while (this.waiting.length > 0) {
      const waitMs = this.waitMs(this.clock.now());
      if (waitMs > 0) {
        this.wakeIn(waitMs);
        return;
      }
      this.start();
      this.waiting.shift()!();
    }
  }

  private start(): void {
    if (!this.limit) return;
    this.recentStartsMs.push(this.clock.now());
    if (this.recentStartsMs.length > this.limit.calls) this.recentStartsMs.shift();
  }

  /** How long until the next call may start. */
  private waitMs(nowMs: number): number {
    const blocked = this.blockedUntilMs - nowMs;
    if (!this.limit || this.recentStartsMs.length < this.limit.calls) return Math.max(0, blocked);
    // The window is full: the oldest of the last `calls` starts must leave it first.
    const windowFrees = this.recentStartsMs[0]! + this.limit.windowMs - nowMs;
    return Math.max(0, blocked, windowFrees);
  }

  private wakeIn(delayMs: number): void {
    this.timer?.cancel();
    this.timer = this.clock.setTimer(delayMs, () => {
      this.timer = undefined;
      this.pump();
    });
  }
}
