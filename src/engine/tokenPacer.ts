import type { Clock } from '../ports/clock.js';
import { shown } from '../graph/shown.js';

/** A provider's token budget: at most `tokens` in any `windowMs`. */
export interface TokenLimit {
  readonly tokens: number;
  readonly windowMs: number;
  /**
   * Tokens a call is expected to use before it reports its usage. @defaultValue the largest usage
   * reported so far, and `tokens / 10` before the first report
   */
  readonly expectedTokens?: number;
}

/** Tokens held for one call: the expected count until the call reports what it used. */
export interface TokenReservation {
  tokens: number;
  /** When the call's tokens leave the window: `windowMs` after it settles (open while it runs). */
  endsAtMs: number;
}

/**
 * Paces one adapter's calls so that the tokens they use stay within a declared budget: a call
 * starts only when the tokens held in the window plus its expected tokens fit. A call's tokens are
 * held from its start until `windowMs` after it settles, so that the calls the provider sees in any
 * window of that length were all held at once. Calls start in the order they asked.
 */
export class TokenPacer {
  private readonly held: TokenReservation[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  private largestReported = 0;
  private changed: (() => void) | undefined;

  constructor(
    private readonly limit: TokenLimit,
    private readonly clock: Clock,
  ) {
    if (!(limit.tokens > 0) || !(limit.windowMs > 0)) {
      throw new RangeError(`tokenLimit needs tokens and windowMs above 0, got ${shown(limit)}; declare the provider's tokens per window`);
    }
  }

  /** Waits for room for one call's expected tokens and holds them; rejects when `signal` aborts first. */
  reserve(signal: AbortSignal): Promise<TokenReservation> {
    const turn = this.queue.then(() => this.waitForRoom(signal));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  /** The call ended: hold what it used (`undefined`: what was expected; 0 for a refused call) for another window. */
  settle(reservation: TokenReservation, usedTokens: number | undefined): void {
    if (usedTokens !== undefined) {
      reservation.tokens = usedTokens;
      this.largestReported = Math.max(this.largestReported, usedTokens);
    }
    reservation.endsAtMs = this.clock.now() + this.limit.windowMs;
    this.changed?.();
  }

  private expectedTokens(): number {
    const expected = this.limit.expectedTokens ?? (this.largestReported || this.limit.tokens / 10);
    // A call larger than the whole budget waits for an empty window rather than for ever.
    return Math.min(expected, this.limit.tokens);
  }

  private async waitForRoom(signal: AbortSignal): Promise<TokenReservation> {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const nowMs = this.clock.now();
      this.forgetEnded(nowMs);
      const expected = this.expectedTokens();
      const heldTokens = this.held.reduce((sum, r) => sum + r.tokens, 0);
      if (heldTokens + expected <= this.limit.tokens) {
        const reservation = { tokens: expected, endsAtMs: Infinity };
        this.held.push(reservation);
        return reservation;
      }
      await this.nextChange(nowMs, signal);
    }
  }

  private forgetEnded(nowMs: number): void {
    for (let i = this.held.length - 1; i >= 0; i -= 1) if (this.held[i]!.endsAtMs <= nowMs) this.held.splice(i, 1);
  }

  /** Resolves when a held call settles or the earliest settled one leaves the window; rejects at the abort. */
  private nextChange(nowMs: number, signal: AbortSignal): Promise<void> {
    const earliestEndMs = Math.min(...this.held.map((r) => r.endsAtMs));
    return new Promise<void>((resolve, reject) => {
      const stop = () => {
        timer?.cancel();
        signal.removeEventListener('abort', onAbort);
        this.changed = undefined;
      };
      const onAbort = () => {
        stop();
        reject(signal.reason);
      };
      const wake = () => {
        stop();
        resolve();
      };
      const timer = Number.isFinite(earliestEndMs) ? this.clock.setTimer(earliestEndMs - nowMs, wake) : undefined;
      // Calls wait their turn one at a time, so one waiter listens for settles.
      this.changed = wake;
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
