import { describe, expect, it } from 'vitest';
import { RateGate, type Admission } from '../../../src/engine/rateGate.js';
import type { CallLimit } from '../../../src/graph/nodes.js';
import { SeededRandom } from '../../../testkit/seededRandom.js';
import { VirtualClock } from '../../../testkit/virtualClock.js';

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A gate on a virtual clock, and the admissions it made, in order, with their virtual times. */
function setup(limit?: CallLimit) {
  const clock = new VirtualClock();
  const gate = new RateGate(clock.view('engine'), limit);
  const admitted: Array<{ id: string; atMs: number }> = [];
  const admissions = new Map<string, Admission>();
  const admit = (id: string, options: { front?: boolean } = {}) =>
    gate.admit(options).then((admission) => {
      admitted.push({ id, atMs: clock.now() });
      admissions.set(id, admission);
    });
  /** Fires every timer due by `ms`, letting admissions settle after each, then moves time to `ms`. */
  const runTo = async (ms: number) => {
    await flush();
    while (clock.fireNext(ms)) await flush();
    clock.advanceTo(ms);
    await flush();
  };
  return { clock, gate, admitted, admissions, admit, runTo };
}

describe('RateGate', () => {
  it('admits at once when nothing limits it', async () => {
    const { gate, admitted, admit, runTo } = setup();
    void admit('a');
    void admit('b');
    await runTo(0);
    expect(admitted).toEqual([
      { id: 'a', atMs: 0 },
      { id: 'b', atMs: 0 },
    ]);
    expect(gate.queued).toBe(0);
  });

  it('admits waiters first come, first served', async () => {
    const { gate, admitted, admit, runTo } = setup({ calls: 1, windowMs: 1_000 });
    for (const id of ['a', 'b', 'c', 'd']) void admit(id);
    await runTo(0);
    expect(admitted).toEqual([{ id: 'a', atMs: 0 }]);
    expect(gate.queued).toBe(3);
    await runTo(10_000);
    expect(admitted).toEqual([
      { id: 'a', atMs: 0 },
      { id: 'b', atMs: 1_000 },
      { id: 'c', atMs: 2_000 },
      { id: 'd', atMs: 3_000 },
    ]);
  });

  it('after a 429 admits no call until Retry-After has passed, then every waiter in order', async () => {
    const { clock, gate, admitted, admit, runTo } = setup();
    await runTo(500);
    gate.rateLimited(2_000);
    for (const id of ['a', 'b', 'c']) void admit(id);
    await runTo(2_499);
    expect(admitted).toEqual([]);
    expect(gate.queued).toBe(3);
    await runTo(2_500);
    expect(admitted.map((a) => a.id)).toEqual(['a', 'b', 'c']);
    expect(admitted.every((a) => a.atMs === 2_500)).toBe(true);
    expect(clock.now()).toBe(2_500);
  });

  it('blocks a call asked for while it is blocked, and keeps the later of two Retry-Afters', async () => {
    const { gate, admitted, admit, runTo } = setup();
    gate.rateLimited(3_000);
    await runTo(1_000);
    gate.rateLimited(500); // ends at 1500, before the first one: the gate stays blocked until 3000
    void admit('late');
    await runTo(2_999);
    expect(admitted).toEqual([]);
    await runTo(3_000);
    expect(admitted).toEqual([{ id: 'late', atMs: 3_000 }]);
  });

  it('extends the block when a longer Retry-After comes in while calls wait', async () => {
    const { gate, admitted, admit, runTo } = setup();
    gate.rateLimited(1_000);
    void admit('a');
    await runTo(500);
    gate.rateLimited(2_000); // now until 2500
    await runTo(2_499);
    expect(admitted).toEqual([]);
    await runTo(2_500);
    expect(admitted).toEqual([{ id: 'a', atMs: 2_500 }]);
  });

  it('puts a refused call back at the front, ahead of the calls that waited', async () => {
    const { gate, admitted, admit, runTo } = setup();
    gate.rateLimited(1_000);
    void admit('b');
    void admit('c');
    void admit('refused', { front: true });
    await runTo(1_000);
    expect(admitted.map((a) => a.id)).toEqual(['refused', 'b', 'c']);
  });

  it('puts a refused call at the front under a declared limit too', async () => {
    const { admitted, admit, runTo } = setup({ calls: 1, windowMs: 100 });
    void admit('first');
    void admit('b');
    await runTo(0);
    void admit('refused', { front: true });
    await runTo(1_000);
    expect(admitted).toEqual([
      { id: 'first', atMs: 0 },
      { id: 'refused', atMs: 100 },
      { id: 'b', atMs: 200 },
    ]);
  });

  it('with a declared limit admits `calls` at once and the next one when the oldest leaves the window', async () => {
    const { admitted, admit, runTo } = setup({ calls: 3, windowMs: 1_000 });
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f', 'g']) void admit(id);
    await runTo(10_000);
    expect(admitted.map((a) => a.atMs)).toEqual([0, 0, 0, 1_000, 1_000, 1_000, 2_000]);
  });

  it('never admits more than `calls` in any `windowMs`, whatever the arrivals', async () => {
    const limit = { calls: 4, windowMs: 1_000 };
    const { clock, admitted, admit, runTo } = setup(limit);
    const random = new SeededRandom(42);
    let t = 0;
    for (let i = 0; i < 200; i++) {
      t += random.int(0, 400);
      // Arrivals come on a driver timer, as calls arrive from events finishing.
      clock.view('arrivals').setTimer(t - clock.now(), () => void admit(`call-${i}`));
    }
    await runTo(1_000_000);
    expect(admitted).toHaveLength(200);
    const times = admitted.map((a) => a.atMs);
    for (let i = 0; i + limit.calls < times.length; i++) {
      // The (calls+1)-th admission after i is a full window later.
      expect(times[i + limit.calls]! - times[i]!).toBeGreaterThanOrEqual(limit.windowMs);
    }
    // Times never go back, and FIFO holds.
    expect(admitted.map((a) => a.id)).toEqual(Array.from({ length: 200 }, (_, i) => `call-${i}`));
    for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThanOrEqual(times[i - 1]!);
  });

  it('honours a 429 on top of a declared limit', async () => {
    const { gate, admitted, admit, runTo } = setup({ calls: 10, windowMs: 1_000 });
    void admit('a');
    await runTo(100);
    gate.rateLimited(5_000);
    void admit('b');
    await runTo(5_099);
    expect(admitted.map((a) => a.id)).toEqual(['a']);
    await runTo(5_100);
    expect(admitted).toEqual([
      { id: 'a', atMs: 0 },
      { id: 'b', atMs: 5_100 },
    ]);
  });
});

describe('RateGate learning a budget from 429s', () => {
  it('learns the budget from the first 429, the window length from the second, then admits the budget plus one probe per window', async () => {
    const { gate, admitted, admissions, admit, runTo } = setup();
    const first: Array<Promise<Admission>> = [];
    for (let i = 0; i < 4; i++) first.push(gate.admit());
    await runTo(100);
    // Three calls went through; the provider refused the third (index 2): the budget is 2 calls,
    // and a window ends at Retry-After (10 000). The gate's start is no window end: no length yet.
    gate.rateLimited(9_900, await first[2]!);
    expect(gate.learnedBudget).toBe(2);
    expect(gate.learnedLimit).toBeUndefined();
    const second: Array<Promise<Admission>> = [];
    for (let i = 0; i < 5; i++) second.push(gate.admit());
    await runTo(9_999);
    expect(gate.queued).toBe(5);
    // The window that opens at 10 000 takes the budget plus one probe, then waits for their answers.
    await runTo(10_000);
    expect(gate.queued).toBe(2);
    const probe = await second[2]!;
    expect(probe).toEqual({ windowStartMs: 10_000, index: 2, atMs: 10_000 });
    // The probe is refused, ending the provider's window at 20 000: one window is 10 000 long.
    await runTo(10_100);
    gate.rateLimited(9_900, probe);
    expect(gate.learnedLimit).toEqual({ calls: 2, windowMs: 10_000 });
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) void admit(id);
    await runTo(19_999);
    expect(admitted).toEqual([]);
    // At 20 000: the 2 left from before, then the budget plus one (the probe) in all.
    await runTo(20_000);
    expect(admitted.map((a) => a.id)).toEqual(['a']);
    await runTo(29_999);
    expect(admitted).toHaveLength(1);
    // Its probe was answered and no call of that window was refused: the budget grows to 3, so 3 + 1 go through at 30 000.
    gate.answered(admissions.get('a')!);
    await runTo(30_000);
    expect(gate.learnedLimit).toEqual({ calls: 3, windowMs: 10_000 });
    expect(admitted.filter((a) => a.atMs === 30_000).map((a) => a.id)).toEqual(['b', 'c', 'd', 'e']);
  });

  it('does not count the calls of quiet windows before a burst into the budget', () => {
    // Provider windows of 10 s from 0, 5 calls each. Three quiet calls in [0, 10 s), a burst at 12 s:
    // calls 3..7 are accepted, call 8 is refused with Retry-After to 20 s.
    const { clock, gate } = setup();
    const admissions: Admission[] = [];
    for (const atMs of [1_000, 4_000, 7_000]) {
      clock.advanceTo(atMs);
      admissions.push(gate.tryAdmit()!);
    }
    clock.advanceTo(12_000);
    for (let i = 0; i < 6; i++) admissions.push(gate.tryAdmit()!);
    clock.advanceTo(12_100);
    gate.rateLimited(7_900, admissions[8]);
    expect(gate.learnedBudget).toBe(5);
    // The window that opens at 20 s admits the budget plus one; its refusal ends at 30 s: one window.
    clock.advanceTo(20_000);
    const next = Array.from({ length: 7 }, () => gate.tryAdmit());
    expect(next.map((a) => a?.index)).toEqual([0, 1, 2, 3, 4, 5, undefined]);
    clock.advanceTo(20_100);
    gate.rateLimited(9_900, next[5]);
    expect(gate.learnedLimit).toEqual({ calls: 5, windowMs: 10_000 });
  });

  it("learns the length from two window ends, and counts only the refused call's own window when quiet windows came between", () => {
    const { clock, gate } = setup();
    // A first 429 at 5 s: a window ends at 10 s.
    clock.advanceTo(5_000);
    gate.rateLimited(5_000, gate.tryAdmit()!);
    // Quiet windows: one call at 15 s and one at 25 s, then a burst at 32 s.
    const calls: Admission[] = [];
    for (const atMs of [15_000, 25_000, 32_000, 32_000]) {
      clock.advanceTo(atMs);
      calls.push(gate.tryAdmit()!);
      // Answered at once: the window, whose length is not known yet, admits 1, 2, ... more each time.
      if (calls.length < 4) gate.answered(calls.at(-1)!);
    }
    expect(calls.map((c) => c.windowStartMs)).toEqual([10_000, 10_000, 10_000, 10_000]);
    // The call at 32 s (index 3) is refused until 40 s: 30 s after the window opened, three provider
    // windows of 10 s (or one of 30 s, or two of 15 s); the shortest that holds the refusal is 10 s,
    // so only the call at 32 s before it counts.
    clock.advanceTo(32_100);
    gate.rateLimited(7_900, calls[3]);
    expect(gate.learnedLimit).toEqual({ calls: 1, windowMs: 30_000 });
  });

  it('learns nothing from a 429 that came back after its window ended (a Retry-After of 0)', () => {
    const { clock, gate } = setup();
    const calls = [gate.tryAdmit()!, gate.tryAdmit()!];
    clock.advanceTo(10_050);
    gate.rateLimited(0, calls[1]);
    expect(gate.learnedBudget).toBeUndefined();
    // No window end, so no window opened there: the gate still admits every call.
    expect(Array.from({ length: 5 }, () => gate.tryAdmit()).every((a) => a?.windowStartMs === 0)).toBe(true);
  });

  /**
   * A gate that learned 1 call per 10 s from two windows' 429s, whose extra call of the window at
   * 20 000 was never answered, at 30 000 with the next window's budget call made: its extra call next.
   */
  function learnedThenExtraCall() {
    const { clock, gate } = setup();
    const first = [gate.tryAdmit()!, gate.tryAdmit()!];
    clock.advanceTo(100);
    gate.rateLimited(9_900, first[1]);
    clock.advanceTo(10_000);
    const second = [gate.tryAdmit()!, gate.tryAdmit()!];
    clock.advanceTo(10_100);
    gate.rateLimited(9_900, second[1]);
    expect(gate.learnedLimit).toEqual({ calls: 1, windowMs: 10_000 });
    // The window at 20 000: the budget and the extra call; the extra call is not answered by 30 000.
    clock.advanceTo(20_000);
    const third = [gate.tryAdmit()!, gate.tryAdmit()!];
    gate.answered(third[0]!);
    clock.advanceTo(30_000);
    expect(gate.tryAdmit()).toBeDefined();
    expect(gate.learnedLimit).toEqual({ calls: 1, windowMs: 10_000 });
    const extra = gate.tryAdmit()!;
    expect(extra.index).toBe(1);
    return { clock, gate, extra };
  }

  it('grows the budget only when the extra call was answered, not when its 429 is still on its way', () => {
    const { clock, gate, extra } = learnedThenExtraCall();
    // This window's extra call is answered: the next window grows the budget to 2.
    gate.answered(extra);
    clock.advanceTo(40_000);
    gate.tryAdmit();
    expect(gate.learnedLimit).toEqual({ calls: 2, windowMs: 10_000 });
  });

  it('does not grow the budget for an extra call given up before its answer (released)', () => {
    const { clock, gate, extra } = learnedThenExtraCall();
    gate.released(extra);
    clock.advanceTo(40_000);
    gate.tryAdmit();
    expect(gate.learnedLimit).toEqual({ calls: 1, windowMs: 10_000 });
  });

  it('lets an aborted call leave the queue uncounted, and drops its wake-up when no call is left', async () => {
    const { clock, gate, admitted, admit, runTo } = setup();
    gate.rateLimited(10_000);
    const first = new AbortController();
    const second = new AbortController();
    const a = gate.admit({ signal: first.signal }).catch((error: unknown) => error);
    const b = gate.admit({ signal: second.signal }).catch((error: unknown) => error);
    void admit('c');
    await runTo(1_000);
    first.abort(new Error('revoked'));
    expect(((await a) as Error).message).toBe('revoked');
    expect(gate.queued).toBe(2);
    // c is still waiting: the gate still wakes at 10 s for it.
    expect(clock.nextDueMs()).toBe(10_000);
    second.abort(new Error('revoked'));
    await b;
    await runTo(10_000);
    expect(admitted).toEqual([{ id: 'c', atMs: 10_000 }]);
    expect(gate.queued).toBe(0);

    // An already aborted signal is refused at once; with nobody waiting, no timer is left behind.
    gate.rateLimited(5_000);
    const gone = new AbortController();
    gone.abort(new Error('stopped'));
    await expect(gate.admit({ signal: gone.signal })).rejects.toThrow('stopped');
    const late = new AbortController();
    const waiting = gate.admit({ signal: late.signal }).catch(() => undefined);
    await runTo(11_000);
    expect(clock.nextDueMs()).toBe(15_000);
    late.abort(new Error('stopped'));
    await waiting;
    expect(clock.nextDueMs()).toBeUndefined();
  });
  it('tryAdmit admits at once only when admit would, and counts the call the same way', async () => {
    const { clock, gate, admitted, admit, runTo } = setup({ calls: 2, windowMs: 1_000 });
    expect(gate.tryAdmit()).toEqual({ windowStartMs: 0, index: 0, atMs: 0 });
    expect(gate.tryAdmit()).toEqual({ windowStartMs: 0, index: 1, atMs: 0 });
    // The declared window is full: no call now, and a waiter queues.
    expect(gate.tryAdmit()).toBeUndefined();
    void admit('waiter');
    await runTo(999);
    expect(admitted).toEqual([]);
    // The window frees a slot at 1,000: the waiter is first, and tryAdmit does not jump it.
    clock.advanceTo(1_000);
    expect(gate.tryAdmit()).toBeUndefined();
    await runTo(1_000);
    expect(admitted).toEqual([{ id: 'waiter', atMs: 1_000 }]);
    expect(gate.tryAdmit()).toEqual({ windowStartMs: 0, index: 3, atMs: 1_000 });
    gate.rateLimited(500);
    await runTo(1_200);
    expect(gate.tryAdmit()).toBeUndefined();
    await runTo(2_500);
    expect(gate.tryAdmit()).toBeDefined();
  });
});
