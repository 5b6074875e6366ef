// The fallback's circuit on a virtual clock: when it opens, half-opens and closes, what each new
// event may do meanwhile, a probe that ends without a verdict, and how it judges an event whose
// attempts ran out.
import { describe, expect, it } from 'vitest';
import { CircuitBreaker, CircuitOpenError, type CircuitEvent, type CircuitState } from '../../../src/engine/circuitBreaker.js';
import type { Try } from '../../../src/engine/tries.js';
import { VirtualClock } from '../../../testkit/virtualClock.js';

const FAILED: Try<unknown> = { kind: 'failed', error: 'the provider answered 503' };
const ANSWERED: Try<unknown> = { kind: 'done', value: { action: 'refund' } };
const REFUSED: Try<unknown> = { kind: 'refused' };

/** Events, as the breaker tells them apart: by their place in the log. */
const [e1, e2, e3] = [1, 2, 3].map((offset) => ({ topic: 'disputes', partition: 0, offset })) as [CircuitEvent, CircuitEvent, CircuitEvent];

function setup() {
  const clock = new VirtualClock();
  const changes: string[] = [];
  const causes: Array<string | undefined> = [];
  const breaker = new CircuitBreaker(clock.view('engine'), 'decide', 2_000, 3_000, (state: CircuitState, atMs, cause) => {
    changes.push(`${state}@${atMs}`);
    if (state === 'open') causes.push(cause);
  });
  const runTo = (ms: number) => {
    while (clock.fireNext(ms));
    clock.advanceTo(ms);
  };
  return { clock, breaker, changes, causes, runTo };
}

describe('CircuitBreaker', () => {
  it('opens once the failures have lasted afterMs with no answer, and an answer in between starts the count again; the opening says how the last call ended', () => {
    const { breaker, changes, causes, runTo } = setup();
    breaker.entered(e1); // e1 waits at the step throughout
    breaker.saw(FAILED, e1);
    runTo(1_500);
    breaker.saw(ANSWERED, e3);
    runTo(3_000);
    expect(breaker.state).toBe('closed');
    breaker.saw(FAILED, e1);
    runTo(4_999);
    breaker.saw(REFUSED, e2);
    expect(breaker.state).toBe('closed');
    const opened = breaker.opened;
    runTo(5_000);
    expect(breaker.state).toBe('open');
    expect(opened.aborted).toBe(true);
    expect(opened.reason).toBeInstanceOf(CircuitOpenError);
    expect(changes).toEqual(['closed@0', 'open@5000']);
    expect(causes).toEqual(['refused (a 429)']);
    expect(breaker.permit()).toBe('fallback');
  });

  it('half-opens after halfOpenAfterMs with one probe; a failed probe opens it again, an answered one closes it', () => {
    const { breaker, changes, runTo } = setup();
    breaker.entered(e1);
    breaker.saw(FAILED, e1);
    runTo(2_000);
    runTo(5_000);
    expect(breaker.state).toBe('half-open');
    expect(breaker.opened.aborted).toBe(false);
    expect([breaker.permit(), breaker.permit()]).toEqual(['probe', 'fallback']);
    breaker.saw(FAILED, e1);
    expect(breaker.state).toBe('open');
    runTo(8_000);
    expect(breaker.permit()).toBe('probe');
    breaker.saw(ANSWERED, e3);
    expect([breaker.state, breaker.permit()]).toEqual(['closed', 'call']);
    expect(changes).toEqual(['closed@0', 'open@2000', 'half-open@5000', 'open@5000', 'half-open@8000', 'closed@8000']);
  });

  it('leaves the probe to the next event when the probing one ends without a verdict (given up, or its attempts already spent)', () => {
    const { breaker, runTo } = setup();
    breaker.entered(e1);
    breaker.saw(FAILED, e1);
    runTo(5_000);
    const permit = breaker.permit();
    expect(permit).toBe('probe');
    breaker.released(permit);
    expect(breaker.permit()).toBe('probe');
    // A released event that was not the probe changes nothing.
    breaker.released('fallback');
    expect(breaker.permit()).toBe('fallback');
  });

  it('judges an event whose attempts ran out: poison alone or while the step answers, an outage when another event failed too since the last answer, or once open', () => {
    const { breaker, runTo } = setup();
    expect(breaker.judge(e1)).toBe('poison'); // nothing failed
    breaker.entered(e2);
    breaker.saw(FAILED, e1);
    breaker.saw(FAILED, { ...e1 }); // the same event again (redelivered: another object, the same place in the log)
    expect(breaker.judge(e1)).toBe('poison'); // its own failures only
    breaker.saw(REFUSED, e3); // another's call refused (a 429): it says nothing of poison
    expect(breaker.judge(e1)).toBe('poison');
    breaker.saw(FAILED, e2);
    expect([breaker.judge(e1), breaker.judge(e2), breaker.judge(e3)]).toEqual(['outage', 'outage', 'outage']);
    breaker.saw(ANSWERED, e3); // the step answers: the failures before it tell nothing
    expect(breaker.judge(e1)).toBe('poison');
    breaker.saw(FAILED, e2);
    expect([breaker.judge(e1), breaker.judge(e2)]).toEqual(['outage', 'poison']);
    runTo(2_000); // e2 failed and waits at the step, with no answer since 0: open
    expect(breaker.judge(e2)).toBe('outage');
  });

  it("opens at afterMs only while an event that failed or was refused waits at the step; once none does, at the run's next failure or refusal", () => {
    const { breaker, changes, runTo } = setup();
    breaker.entered(e1);
    breaker.saw(FAILED, e1);
    runTo(1_000);
    breaker.saw(FAILED, e1);
    breaker.left(e1); // parked: poison, or the first event of an outage
    breaker.entered(e3); // a call under way, no failure yet
    runTo(2_500);
    expect(changes).toEqual(['closed@0']); // nothing that failed waited at the step at 2,000
    breaker.entered(e2);
    breaker.saw(REFUSED, e2); // the run, unanswered since 0, has lasted afterMs
    expect(changes).toEqual(['closed@0', 'open@2500']);
  });

  it('ends a run whose events all ended more than afterMs before its next failure or refusal: a 429 long after a lone poison opens nothing', () => {
    const { breaker, changes, runTo } = setup();
    breaker.entered(e1);
    breaker.saw(FAILED, e1);
    runTo(1_000);
    breaker.saw(FAILED, e1);
    breaker.left(e1); // parked
    runTo(3_600_000);
    breaker.entered(e2);
    breaker.saw(REFUSED, e2); // a new run: it opens only afterMs from now, if e2 still waits then
    expect(breaker.judge(e3)).toBe('poison'); // e1's failures are no longer in it
    expect(changes).toEqual(['closed@0']);
    runTo(3_602_000);
    expect(changes).toEqual(['closed@0', 'open@3602000']);
  });

  it('counts failures stored before (a restart) for the judgement when they are recent and unanswered; no event at the step, the circuit stays closed', () => {
    const { breaker, changes, runTo } = setup();
    runTo(10_000);
    breaker.failedBefore(e2, [{ attempt: 1, atMs: 7_000, error: 'the provider answered 503' }]); // older than afterMs (2,000)
    breaker.failedBefore(e3, [{ attempt: 1, atMs: 9_500, error: 'its answer was refused', answered: true }]); // the step was up
    expect(breaker.judge(e1)).toBe('poison');
    breaker.failedBefore(e2, [{ attempt: 1, atMs: 9_000, error: 'the provider answered 503' }]);
    expect(breaker.judge(e1)).toBe('outage');
    runTo(60_000);
    expect(changes).toEqual(['closed@0']);
  });

  it('a run seeded by stored failures counts from the first of them: an event still at the step then opens the circuit afterMs after it', () => {
    const { breaker, changes, runTo } = setup();
    runTo(10_000);
    breaker.failedBefore(e2, [{ attempt: 1, atMs: 9_000, error: 'the provider answered 503' }]);
    breaker.entered(e2);
    runTo(10_999);
    expect(changes).toEqual(['closed@0']);
    runTo(11_000); // 9,000 + afterMs (2,000)
    expect(changes).toEqual(['closed@0', 'open@11000']);
  });

  it('stored failures after the step last answered here count; those before it do not', () => {
    const { breaker, runTo } = setup();
    runTo(10_000);
    breaker.saw(ANSWERED, e3); // answered at 10,000
    runTo(10_500);
    breaker.failedBefore(e2, [{ attempt: 1, atMs: 9_500, error: 'the provider answered 503' }]);
    expect(breaker.judge(e1)).toBe('poison');
    breaker.failedBefore(e2, [{ attempt: 2, atMs: 10_200, error: 'the provider answered 503' }]);
    expect(breaker.judge(e1)).toBe('outage');
  });

  it("a stored failure stamped ahead of this clock (another worker's) counts, as if it happened now", () => {
    const { breaker, runTo } = setup();
    runTo(10_000);
    breaker.failedBefore(e2, [{ attempt: 1, atMs: 10_100, error: 'the provider answered 503' }]);
    expect(breaker.judge(e1)).toBe('outage');
  });

  it('dispose cancels the timer that would open or half-open it: a stopped engine leaves none behind', () => {
    const closing = setup();
    closing.breaker.saw(FAILED, e1);
    closing.breaker.dispose();
    closing.runTo(60_000);
    expect(closing.breaker.state).toBe('closed');
    expect(closing.changes).toEqual(['closed@0']);

    const open = setup();
    open.breaker.entered(e1);
    open.breaker.saw(FAILED, e1);
    open.runTo(2_000);
    expect(open.breaker.state).toBe('open');
    open.breaker.dispose();
    open.runTo(60_000);
    expect(open.breaker.state).toBe('open');
    expect(open.changes).toEqual(['closed@0', 'open@2000']);
  });
});
