import { describe, expect, it } from 'vitest';
import { Outcome, type OutcomeEvent } from '../../../src/engine/outcomes.js';
import { RateLimitWarnings, type RateLimitedFor } from '../../../src/kafka/rateLimitWarnings.js';

function event(outcome: OutcomeEvent['outcome'], atMs: number): OutcomeEvent {
  return { outcome, atMs, topic: 'disputes', partition: 0, offset: 0, key: 'a', effectId: 'disputes/0/0' };
}

function watch(options = { afterMs: 30_000, everyMs: 60_000 }) {
  const warned: RateLimitedFor[] = [];
  return { warnings: new RateLimitWarnings('decide', (s) => warned.push(s), options), warned };
}

describe('RateLimitWarnings', () => {
  it('warns once the step has been refused past the threshold, then once per interval while it lasts', () => {
    const { warnings, warned } = watch();
    for (let t = 0; t <= 200_000; t += 1_000) warnings.outcome(event(Outcome.RATE_LIMITED, t));
    expect(warned.map((w) => w.forMs)).toEqual([30_000, 90_000, 150_000]);
    expect(warned[0]).toEqual({ step: 'decide', sinceMs: 0, forMs: 30_000, refusals: 31 });
  });

  it('says nothing for refusals shorter than the threshold, and starts over after an answer', () => {
    const { warnings, warned } = watch();
    warnings.outcome(event(Outcome.RATE_LIMITED, 0));
    warnings.outcome(event(Outcome.RATE_LIMITED, 29_000));
    warnings.outcome(event(Outcome.APPLIED, 29_500));
    warnings.outcome(event(Outcome.RATE_LIMITED, 40_000));
    warnings.check(69_000);
    expect(warned).toEqual([]);
    warnings.check(70_000);
    expect(warned).toEqual([{ step: 'decide', sinceMs: 40_000, forMs: 30_000, refusals: 1 }]);
  });

  it('is not reset by outcomes that say nothing of the provider (held, filtered, duplicate)', () => {
    const { warnings, warned } = watch();
    warnings.outcome(event(Outcome.RATE_LIMITED, 0));
    for (const outcome of [Outcome.HELD, Outcome.FILTERED, Outcome.DUPLICATE, Outcome.DEAD_LETTERED]) warnings.outcome(event(outcome, 10_000));
    warnings.check(30_000);
    expect(warned).toHaveLength(1);
  });

  it('warns on the timer when a long Retry-After leaves no outcome to look at', () => {
    const { warnings, warned } = watch();
    warnings.outcome(event(Outcome.RATE_LIMITED, 0)); // Retry-After: 10 minutes
    warnings.check(35_000);
    warnings.check(40_000);
    warnings.check(95_000);
    expect(warned.map((w) => w.forMs)).toEqual([35_000, 95_000]);
  });

  it('refuses a negative threshold, naming it', () => {
    expect(() => new RateLimitWarnings('decide', () => undefined, { afterMs: -1 })).toThrow('rateLimitWarnings.afterMs must be 0 or more milliseconds, got -1');
  });
});
