// The fallback's circuit on a virtual clock: when it opens, half-opens and closes, what each new
// event may do meanwhile, a probe that ends without a verdict, and how it judges an event whose
// attempts ran out.
import { describe, expect, it } from 'vitest';
import { CircuitBreaker, CircuitOpenError, type CircuitState } from '../../../src/engine/circuitBreaker.js';
import { VirtualClock } from '../../../testkit/virtualClock.js';

function setup() {
  const clock = new VirtualClock();
  const changes: string[] = [];
  const breaker = new CircuitBreaker(clock.view('engine'), 'decide', 2_000, 3_000, (state: CircuitState, atMs) => changes.push(`${state}@${atMs}`));
  const runTo = (ms: number) => {
    while (clock.fireNext(ms));
    clock.advanceTo(ms);
  };
  return { clock, breaker, changes, runTo };
}

describe('CircuitBreaker', () => {
  it('opens once the failures have lasted afterMs with no answer, and an answer in between starts the count again', () => {
    const { breaker, changes, runTo } = setup();
    breaker.saw(false);
    runTo(1_500);
    breaker.saw(true);
    runTo(3_000);
    expect(breaker.state).toBe('closed');
    breaker.saw(false);
    runTo(4_999);
    breaker.saw(false);
    expect(breaker.state).toBe('closed');
    const opened = breaker.opened;
    runTo(5_000);
    expect(breaker.state).toBe('open');
    expect(opened.aborted).toBe(true);
    expect(opened.reason).toBeInstanceOf(CircuitOpenError);
    expect(changes).toEqual(['closed@0', 'open@5000']);
    expect(breaker.permit()).toBe('fallback');
  });

  it('half-opens after halfOpenAfterMs with one probe; a failed probe opens it again, an answered one closes it', () => {
    const { breaker, changes, runTo } = setup();
    breaker.saw(false);
    runTo(2_000);
    runTo(5_000);
    expect(breaker.state).toBe('half-open');
    expect(breaker.opened.aborted).toBe(false);
    expect([breaker.permit(), breaker.permit()]).toEqual(['probe', 'fallback']);
    breaker.saw(false);
    expect(breaker.state).toBe('open');
    runTo(8_000);
    expect(breaker.permit()).toBe('probe');
    breaker.saw(true);
    expect([breaker.state, breaker.permit()]).toEqual(['closed', 'call']);
    expect(changes).toEqual(['closed@0', 'open@2000', 'half-open@5000', 'open@5000', 'half-open@8000', 'closed@8000']);
  });

  it('leaves the probe to the next event when the probing one ends without a verdict (given up, or its attempts already spent)', () => {
    const { breaker, runTo } = setup();
    breaker.saw(false);
    runTo(5_000);
    const permit = breaker.permit();
    expect(permit).toBe('probe');
    breaker.released(permit);
    expect(breaker.permit()).toBe('probe');
    // A released event that was not the probe changes nothing.
    breaker.released('fallback');
    expect(breaker.permit()).toBe('fallback');
  });

  it('judges an event whose attempts ran out: poison while the step answers or when it is alone there, an outage once open, and undecided while it fails with no answer and others are at the step', async () => {
    const { breaker, runTo } = setup();
    const live = new AbortController().signal;
    breaker.entered(); // the event judged
    expect(breaker.judge(live)).toBe('poison');
    breaker.saw(false);
    expect([breaker.undecided, breaker.judge(live)]).toEqual([false, 'poison']); // alone at the step
    breaker.entered(); // another event, whose calls will tell
    expect(breaker.undecided).toBe(true);
    const answered = breaker.judge(live);
    breaker.saw(true);
    await expect(answered).resolves.toBe('poison');
    expect(breaker.undecided).toBe(false);

    breaker.saw(false); // a new run of failures, from 0: the circuit opens at 2,000
    const waiting = breaker.judge(live);
    const givenUp = new AbortController();
    const abandoned = breaker.judge(givenUp.signal);
    givenUp.abort(new Error('the event was given up'));
    await expect(abandoned).rejects.toThrow('the event was given up');
    runTo(2_000);
    await expect(waiting).resolves.toBe('outage');
    expect(breaker.judge(live)).toBe('outage');
  });

  it('counts an event come with its attempts spent as a failed call only when other events are at the step', () => {
    const { breaker, changes, runTo } = setup();
    breaker.entered();
    breaker.spent();
    runTo(5_000);
    expect(changes).toEqual(['closed@0']); // alone: no run of failures began
    breaker.entered();
    breaker.spent();
    expect(breaker.undecided).toBe(true);
    runTo(7_000);
    expect(changes).toEqual(['closed@0', 'open@7000']);
  });

  it('dispose cancels the timer that would open or half-open it: a stopped engine leaves none behind', () => {
    const closing = setup();
    closing.breaker.saw(false);
    closing.breaker.dispose();
    closing.runTo(60_000);
    expect(closing.breaker.state).toBe('closed');
    expect(closing.changes).toEqual(['closed@0']);

    const open = setup();
    open.breaker.saw(false);
    open.runTo(2_000);
    expect(open.breaker.state).toBe('open');
    open.breaker.dispose();
    open.runTo(60_000);
    expect(open.breaker.state).toBe('open');
    expect(open.changes).toEqual(['closed@0', 'open@2000']);
  });
});
