import { Outcome, type OutcomeEvent } from '../engine/outcomes.js';

/** When a step that keeps being refused is worth a warning. */
export interface RateLimitWarningOptions {
  /** How long the step must have been refused (429s with no answer between them) before the first warning. @defaultValue 60000 */
  readonly afterMs?: number;
  /** At most one warning per this interval while it lasts. @defaultValue 60000 */
  readonly everyMs?: number;
}

/** What a warning says: which step, since when, how many refusals. */
export interface RateLimitedFor {
  readonly step: string;
  readonly sinceMs: number;
  readonly forMs: number;
  readonly refusals: number;
}

// Outcomes that show the step answered (a decision, or a failed attempt) or a person decided: the
// refusals stopped. Anything else (HELD, FILTERED, DUPLICATE, ...) says nothing about the provider.
const ANSWERED: ReadonlySet<Outcome> = new Set<Outcome>([Outcome.APPLIED, Outcome.RETRY, Outcome.PARKED]);

/**
 * Watches the engine's outcomes for a step that stays rate-limited: every call refused (429) for
 * `afterMs` with no answer between. A 429 is backpressure, logged at debug; a step refused for
 * minutes is a quota or a key that is wrong, which someone must see at the default level. Tell it
 * every outcome and, on a timer, the time, so a long Retry-After still gets its warning.
 */
export class RateLimitWarnings {
  private since: number | undefined;
  private refusals = 0;
  private warnedAt: number | undefined;
  private readonly afterMs: number;
  private readonly everyMs: number;

  constructor(
    private readonly step: string,
    private readonly warn: (state: RateLimitedFor) => void,
    options: RateLimitWarningOptions = {},
  ) {
    this.afterMs = options.afterMs ?? 60_000;
    this.everyMs = options.everyMs ?? 60_000;
    for (const [name, value] of [['afterMs', this.afterMs], ['everyMs', this.everyMs]] as const) {
      if (!Number.isFinite(value) || value < 0) throw new RangeError(`rateLimitWarnings.${name} must be 0 or more milliseconds, got ${value}`);
    }
  }

  outcome(event: OutcomeEvent): void {
    if (event.outcome === Outcome.RATE_LIMITED) {
      this.since ??= event.atMs;
      this.refusals += 1;
      this.check(event.atMs);
    } else if (ANSWERED.has(event.outcome)) {
      this.since = undefined;
      this.refusals = 0;
      this.warnedAt = undefined;
    }
  }

  /** Warns when the step has been refused for `afterMs`, and not warned in the last `everyMs`. */
  check(nowMs: number): void {
    if (this.since === undefined || nowMs - this.since < this.afterMs) return;
    if (this.warnedAt !== undefined && nowMs - this.warnedAt < this.everyMs) return;
    this.warnedAt = nowMs;
    this.warn({ step: this.step, sinceMs: this.since, forMs: nowMs - this.since, refusals: this.refusals });
  }
}
