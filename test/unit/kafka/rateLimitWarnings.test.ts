import { describe, expect, it } from 'vitest';
import type { ModelCallResult } from '../../../src/engine/outcomes.js';
import { RateLimitWarnings, REQUEST_REFUSALS_WARNED, type RateLimitedFor, type RequestRefused } from '../../../src/kafka/rateLimitWarnings.js';

const call = (result: ModelCallResult, atMs: number, step = 'decide') => ({ step, atMs, result });

function watch(options = { afterMs: 30_000, everyMs: 60_000 }) {
  const warned: RateLimitedFor[] = [];
  return { warnings: new RateLimitWarnings((s) => warned.push(s), options), warned };
}

describe('RateLimitWarnings', () => {
  it('warns once the step has been refused past the threshold, then once per interval while it lasts', () => {
    const { warnings, warned } = watch();
    for (let t = 0; t <= 200_000; t += 1_000) warnings.callEnded(call('rate_limited', t));
    expect(warned.map((w) => w.forMs)).toEqual([30_000, 90_000, 150_000]);
    expect(warned[0]).toEqual({ step: 'decide', sinceMs: 0, forMs: 30_000, refusals: 31 });
  });

  it('says nothing for refusals shorter than the threshold, and starts over after an answer', () => {
    const { warnings, warned } = watch();
    warnings.callEnded(call('rate_limited', 0));
    warnings.callEnded(call('rate_limited', 29_000));
    warnings.callEnded(call('answered', 29_500));
    warnings.callEnded(call('rate_limited', 40_000));
    warnings.check(69_000);
    expect(warned).toEqual([]);
    warnings.check(70_000);
    expect(warned).toEqual([{ step: 'decide', sinceMs: 40_000, forMs: 30_000, refusals: 1 }]);
  });

  it('starts over after a failed call: the provider took it, whatever the disposition then did with the event', () => {
    const { warnings, warned } = watch();
    warnings.callEnded(call('rate_limited', 0));
    // One attempt under park({ attempts: 1, onExhausted: 'dlq' | 'skip' }): the event ends
    // DEAD_LETTERED or SKIPPED, never RETRY or PARKED, but the call did reach the provider.
    warnings.callEnded(call('failed', 20_000));
    warnings.check(35_000);
    expect(warned).toEqual([]);
  });

  it('is not reset by a call given up by a stop or a rebalance, which says nothing of the provider', () => {
    const { warnings, warned } = watch();
    warnings.callEnded(call('rate_limited', 0));
    warnings.callEnded(call('aborted', 10_000));
    warnings.check(30_000);
    expect(warned).toHaveLength(1);
  });

  it('watches each step on its own: an answer of one step does not clear the refusals of another', () => {
    const { warnings, warned } = watch();
    warnings.callEnded(call('rate_limited', 0, 'classify'));
    warnings.callEnded(call('answered', 10_000, 'decide'));
    warnings.check(30_000);
    expect(warned).toEqual([{ step: 'classify', sinceMs: 0, forMs: 30_000, refusals: 1 }]);
  });

  it('warns on the timer when a long Retry-After leaves no call to look at', () => {
    const { warnings, warned } = watch();
    warnings.callEnded(call('rate_limited', 0)); // Retry-After: 10 minutes
    warnings.check(35_000);
    warnings.check(40_000);
    warnings.check(95_000);
    expect(warned.map((w) => w.forMs)).toEqual([35_000, 95_000]);
  });

  it('refuses a negative threshold, naming it', () => {
    expect(() => new RateLimitWarnings(() => undefined, { afterMs: -1 })).toThrow('rateLimitWarnings.afterMs must be 0 or more milliseconds, got -1');
  });
});

describe('RateLimitWarnings, one request refused while the step is answered', () => {
  const ended = (result: ModelCallResult, atMs: number, effectId: string) => ({ step: 'decide', effectId, atMs, result });
  function requests() {
    const warned: RequestRefused[] = [];
    return {
      warnings: new RateLimitWarnings(
        () => undefined,
        { afterMs: 30_000, everyMs: 60_000 },
        (s) => warned.push(s),
      ),
      warned,
    };
  }

  it('warns of an event refused REQUEST_REFUSALS_WARNED times after other calls were answered, then at most once per interval', () => {
    const { warnings, warned } = requests();
    for (let i = 0; i <= REQUEST_REFUSALS_WARNED + 1; i++) {
      warnings.callEnded(ended('rate_limited', i * 3_000, 'huge'));
      warnings.callEnded(ended('answered', i * 3_000 + 10, `other-${i}`));
    }
    expect(warned).toEqual([{ step: 'decide', effectId: 'huge', sinceMs: 0, refusals: REQUEST_REFUSALS_WARNED + 1, whileAnswered: REQUEST_REFUSALS_WARNED }]);
  });

  it('says nothing while every call is refused (an outage), nor once the event is answered', () => {
    const { warnings, warned } = requests();
    for (let i = 0; i < 20; i++) for (const id of ['a', 'b']) warnings.callEnded(ended('rate_limited', i * 3_000, id));
    expect(warned).toEqual([]);
    for (let i = 0; i < REQUEST_REFUSALS_WARNED; i++) {
      warnings.callEnded(ended('rate_limited', 100_000 + i * 3_000, 'c'));
      warnings.callEnded(ended('answered', 100_000 + i * 3_000 + 10, `other-${i}`));
    }
    // c's fifth refusal after an answer has not come: its first refusal came before any answer.
    warnings.callEnded(ended('answered', 130_000, 'c'));
    warnings.callEnded(ended('rate_limited', 133_000, 'c'));
    expect(warned).toEqual([]);
  });

  it('forgets an event given up while it waited (no call of its ends again) once afterMs + everyMs have passed', () => {
    const { warnings } = requests();
    warnings.callEnded(ended('rate_limited', 0, 'gone'));
    warnings.callEnded(ended('rate_limited', 3_000, 'gone'));
    expect(warnings.watchedRequests).toBe(1);
    warnings.check(3_000 + 90_000);
    expect(warnings.watchedRequests).toBe(1);
    warnings.check(3_000 + 90_001);
    expect(warnings.watchedRequests).toBe(0);
  });
});
