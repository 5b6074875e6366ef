// A call past its timeoutMs is aborted through ctx.signal and counts as a failed attempt: a hung
// model call or effect releases its event's slot and key, is retried, then parked.
import { afterEach, describe, expect, it } from 'vitest';
import { effect } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import type { DecideContext } from '../../src/graph/nodes.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { Decision, outcomesAt, readParked, type Ev, type Out } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

/** A decide that hangs on the events marked bad: it settles only when its signal aborts (or never, if `ignoresSignal`). */
function hangingDecide(ignoresSignal: boolean) {
  const calls: Array<{ id: string; atMs: number; attempt: number }> = [];
  const aborted: Array<{ id: string; atMs: number; reason: string }> = [];
  const decide = (event: Ev, ctx: DecideContext): Promise<Decision> => {
    calls.push({ id: event.id, atMs: ctx.clock.now(), attempt: ctx.attempt });
    if (!event.bad) return Promise.resolve({ action: 'refund' });
    return new Promise((_, reject) => {
      ctx.signal.addEventListener('abort', () => {
        aborted.push({ id: event.id, atMs: ctx.clock.now(), reason: String((ctx.signal.reason as Error).message) });
        if (!ignoresSignal) reject(ctx.signal.reason);
      });
    });
  };
  return { decide, calls, aborted };
}

function topology(decide: (e: Ev, ctx: DecideContext) => Promise<Decision>) {
  return stream<Ev>('events')
    .keyedSerial({ maxInFlight: 2 })
    .agentStep('decide', decide, { schema: Decision, timeoutMs: 500 })
    .park({ attempts: 2, retryDelayMs: 1_000 })
    .applyOnce(effect('fx', (v: { event: Ev; decision: Decision }) => ({ id: v.event.id, action: v.decision.action }) satisfies Out))
    .to('out')
    .build();
}

describe('agentStep timeoutMs', () => {
  for (const ignoresSignal of [false, true]) {
    it(`a hung decide${ignoresSignal ? ' that ignores its signal' : ''} is aborted after timeoutMs, retried, then parked; its key's next event is held, other keys go on`, async () => {
      const m = hangingDecide(ignoresSignal);
      driver = new TopologyTestDriver(topology(m.decide));
      const input = driver.createInputTopic<Ev>('events');
      input.pipeInput('a', { id: 'a1', bad: true }, { partition: 0 });
      input.pipeInput('b', { id: 'b1' }, { partition: 0 });
      input.pipeInput('a', { id: 'a2' }, { partition: 0 });
      await driver.runUntilIdle();

      expect(m.calls.filter((c) => c.id === 'a1').map((c) => [c.atMs, c.attempt])).toEqual([
        [0, 1],
        [1_500, 2],
      ]);
      expect(m.aborted.map((a) => [a.id, a.atMs])).toEqual([
        ['a1', 500],
        ['a1', 2_000],
      ]);
      expect(m.aborted[0]!.reason).toBe("agentStep 'decide' timed out after 500 ms");
      const a1 = driver.history().filter((h) => h.offset === 0);
      expect(a1.map((h) => [h.outcome, h.atMs, h.attempt])).toEqual([
        ['RETRY', 500, 1],
        ['PARKED', 2_000, 2],
      ]);
      const poison = readParked(driver).find((p) => p.body.reason === 'POISON')!;
      expect(poison.body.errors.map((e) => e.error)).toEqual(["agentStep 'decide' timed out after 500 ms", "agentStep 'decide' timed out after 500 ms"]);
      expect(outcomesAt(driver, 0, 1)).toEqual(['APPLIED']);
      expect(outcomesAt(driver, 0, 2)).toEqual(['HELD']);
      expect(driver.committed()).toEqual([{ topic: 'events', partition: 0, offset: 3 }]);
    });
  }

  it('a decide that answers in time keeps its answer, and its timer does not hold the run', async () => {
    const m = hangingDecide(false);
    driver = new TopologyTestDriver(topology(m.decide));
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' }, { partition: 0 });
    await driver.runUntilIdle();
    expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED']);
    expect(m.aborted).toEqual([]);
    expect(driver.history().at(-1)!.atMs).toBe(0);
  });

  it('is refused unless a whole number of at least 1', () => {
    expect(() =>
      stream<Ev>('events')
        .keyedSerial()
        .agentStep('decide', async () => ({}), { timeoutMs: 0 }),
    ).toThrow("agentStep 'decide': timeoutMs must be a whole number of at least 1, got 0");
  });
});

describe('effect timeoutMs', () => {
  it('a hung effect is aborted after timeoutMs, retried with its decision kept, then parked', async () => {
    const applies: number[] = [];
    let decides = 0;
    const hung = effect(
      'fx',
      (v: { event: Ev; decision: Decision }) => {
        applies.push(driver!.now());
        if (!v.event.bad) return { id: v.event.id, action: v.decision.action } satisfies Out;
        // Ignores its signal: the engine stops waiting for it all the same.
        return new Promise<Out>(() => undefined);
      },
      { timeoutMs: 300 },
    );
    const topology = stream<Ev>('events')
      .keyedSerial()
      .agentStep(
        'decide',
        async () => {
          decides += 1;
          return { action: 'refund' as const };
        },
        { schema: Decision },
      )
      .park({ attempts: 2, retryDelayMs: 1_000 })
      .applyOnce(hung)
      .to('out')
      .build();
    driver = new TopologyTestDriver(topology);
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1', bad: true }, { partition: 0 });
    input.pipeInput('b', { id: 'b1' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(applies.slice(0, 2)).toEqual([0, 1_300]);
    expect(decides).toBe(2);
    expect(
      driver
        .history()
        .filter((h) => h.offset === 0)
        .map((h) => [h.outcome, h.atMs, h.error]),
    ).toEqual([
      ['RETRY', 300, "applyOnce 'fx' timed out after 300 ms"],
      ['PARKED', 1_600, "applyOnce 'fx' timed out after 300 ms"],
    ]);
    expect(outcomesAt(driver, 0, 1)).toEqual(['APPLIED']);
    expect(driver.createOutputTopic<Out>('out').readValuesToList()).toEqual([{ id: 'b1', action: 'refund' }]);
  });
});
