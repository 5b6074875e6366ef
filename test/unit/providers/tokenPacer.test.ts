import { describe, expect, it } from 'vitest';
import { TokenPacer } from '../../../src/engine/tokenPacer.js';
import { VirtualClock } from '../../../testkit/virtualClock.js';

const settled = () => new Promise<void>((resolve) => setImmediate(resolve));
const never = new AbortController().signal;

/** Fires the virtual clock's timers up to `toMs`, letting promises settle between them. */
async function runTo(clock: VirtualClock, toMs: number): Promise<void> {
  await settled();
  while (clock.fireNext(toMs)) await settled();
  clock.advanceTo(toMs);
  await settled();
}

function track<T>(promise: Promise<T>): { done: () => boolean; value: Promise<T> } {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  return { done: () => done, value: promise };
}

describe('TokenPacer', () => {
  it('starts calls while their expected tokens fit, then holds the next until a settled call leaves the window', async () => {
    const clock = new VirtualClock();
    const pacer = new TokenPacer({ tokens: 1_000, windowMs: 10_000, expectedTokens: 400 }, clock.view('t'));
    const first = await pacer.reserve(never);
    const second = await pacer.reserve(never);
    const third = track(pacer.reserve(never));
    await settled();
    expect(third.done()).toBe(false);

    await runTo(clock, 1_000);
    pacer.settle(first, 400);
    pacer.settle(second, 400);
    await runTo(clock, 10_999);
    expect(third.done()).toBe(false); // both settled at 1 000: held until 11 000
    await runTo(clock, 11_000);
    expect(third.done()).toBe(true);
  });

  it('frees what a call did not use: a refused call holds nothing, a smaller usage holds less', async () => {
    const clock = new VirtualClock();
    const pacer = new TokenPacer({ tokens: 1_000, windowMs: 10_000, expectedTokens: 600 }, clock.view('t'));
    const refused = await pacer.reserve(never);
    const waiting = track(pacer.reserve(never));
    await settled();
    expect(waiting.done()).toBe(false);
    pacer.settle(refused, 0);
    await settled();
    expect(waiting.done()).toBe(true);

    const used = await waiting.value;
    pacer.settle(used, 300);
    await expect(pacer.reserve(never)).resolves.toMatchObject({ tokens: 600 }); // 300 + 600 fit
  });

  it('expects the largest usage reported so far, and a tenth of the budget before any report', async () => {
    const clock = new VirtualClock();
    const pacer = new TokenPacer({ tokens: 1_000, windowMs: 10_000 }, clock.view('t'));
    const first = await pacer.reserve(never);
    expect(first.tokens).toBe(100);
    pacer.settle(first, 250);
    await expect(pacer.reserve(never)).resolves.toMatchObject({ tokens: 250 });
  });

  it('lets an aborted wait go without blocking the calls behind it', async () => {
    const clock = new VirtualClock();
    const pacer = new TokenPacer({ tokens: 1_000, windowMs: 10_000, expectedTokens: 1_000 }, clock.view('t'));
    const running = await pacer.reserve(never);
    const abort = new AbortController();
    const aborted = track(pacer.reserve(abort.signal));
    const behind = track(pacer.reserve(never));
    abort.abort(new Error('revoked'));
    await expect(aborted.value).rejects.toThrow('revoked');
    pacer.settle(running, 0);
    await settled();
    expect(behind.done()).toBe(true);
  });

  it('refuses a budget of no tokens, naming the fix', () => {
    expect(() => new TokenPacer({ tokens: 0, windowMs: 1_000 }, new VirtualClock().view('t'))).toThrow(/tokens and windowMs above 0/);
  });
});
