/**
 * What a decide function throws for a 429: backpressure, not a failure. The engine counts no
 * attempt, issues no call of the step until `retryAfterMs` has passed, and keeps the event's place.
 */
export class RateLimited extends Error {
  constructor(readonly retryAfterMs: number) {
    super(`rate limited: retry after ${retryAfterMs} ms`);
    this.name = 'RateLimited';
    if (!Number.isFinite(retryAfterMs) || retryAfterMs < 0) {
      throw new RangeError(`RateLimited needs a retryAfterMs of 0 or more, got ${retryAfterMs}`);
    }
  }
}

export function isRateLimited(error: unknown): error is RateLimited {
  return error instanceof RateLimited;
}
