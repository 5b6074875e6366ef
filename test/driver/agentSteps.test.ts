// Several agent steps in one topology: each with its own name, rate gate, attempts and park; a
// later step and the effect see the earlier decisions by name, in ctx.decisions.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { effect } from '../../src/dsl/effect.js';
import { RateLimited } from '../../src/dsl/rateLimited.js';
import { stream } from '../../src/dsl/stream.js';
import { sleep } from '../../src/ports/clock.js';
import type { DecideContext } from '../../src/graph/nodes.js';
import { TopologyTestDriver, type DriverMode } from '../../testkit/driver.js';
import { Decision, outcomesAt, readParked, type Ev } from './helpers.js';

const Kind = z.object({ kind: z.enum(['fraud', 'service']) });
type Kind = z.infer<typeof Kind>;

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close().catch(() => undefined);
  driver = undefined;
});

interface Calls {
  classify: string[];
  decide: Array<{ id: string; seen: Readonly<Record<string, unknown>> }>;
  applied: Array<{ id: string; decisions: Readonly<Record<string, unknown>> }>;
}

/** classify (parks after 1 attempt, its own topic) → decide (3 attempts, a limit of its own) → the effect. */
interface TwoStepOptions {
  readonly classify?: (e: Ev, ctx: DecideContext) => unknown;
  readonly decide?: (e: Ev, ctx: DecideContext) => unknown;
  readonly effectId?: (ctx: { value: Ev }) => string;
}

function twoSteps(options: TwoStepOptions = {}) {
  const calls: Calls = { classify: [], decide: [], applied: [] };
  const topology = stream<Ev>('events', options.effectId ? { effectId: options.effectId } : {})
    .keyedSerial({ maxInFlight: 4 })
    .agentStep(
      'classify',
      async (e: Ev, ctx) => {
        calls.classify.push(e.id);
        return (options.classify?.(e, ctx) ?? { kind: 'service' }) as Kind;
      },
      { schema: Kind },
    )
    .park({ attempts: 1, topic: 'classify.parked' })
    .agentStep(
      'decide',
      async ({ event }, ctx) => {
        calls.decide.push({ id: event.id, seen: ctx.decisions });
        return (options.decide?.(event, ctx) ?? { action: 'refund' }) as Decision;
      },
      { schema: Decision },
    )
    .park({ attempts: 3, retryDelayMs: 100, retryJitter: 0 })
    .applyOnce(
      effect('fx', ({ event, decision }: { event: { event: Ev; decision: Kind }; decision: Decision }, ctx) => {
        calls.applied.push({ id: event.event.id, decisions: ctx.decisions });
        return { id: event.event.id, kind: event.decision.kind, action: decision.action };
      }),
    )
    .to('out')
    .build();
  return { topology, calls };
}

describe('several agent steps', () => {
  it.each<DriverMode>(['plain', 'staged', 'exactlyOnce'])(
    'runs them in order; a later step and the effect see the earlier decisions by name (%s)',
    async (mode) => {
      const { topology, calls } = twoSteps({ classify: (e) => ({ kind: e.id.startsWith('f') ? 'fraud' : 'service' }) });
      driver = new TopologyTestDriver(topology, { mode });
      const input = driver.createInputTopic<Ev>('events');
      input.pipeInput('a', { id: 'f1' }, { partition: 0 });
      input.pipeInput('b', { id: 's1' }, { partition: 0 });
      await driver.runUntilIdle();

      expect(calls.classify.sort()).toEqual(['f1', 's1']);
      expect(calls.decide.find((c) => c.id === 'f1')!.seen).toEqual({ classify: { kind: 'fraud' } });
      expect(calls.applied.find((c) => c.id === 's1')!.decisions).toEqual({ classify: { kind: 'service' }, decide: { action: 'refund' } });
      const out = driver.createOutputTopic<{ id: string; kind: string; action: string }>('out').readValuesToList();
      expect(out.sort((x, y) => x.id.localeCompare(y.id))).toEqual([
        { id: 'f1', kind: 'fraud', action: 'refund' },
        { id: 's1', kind: 'service', action: 'refund' },
      ]);
      expect(driver.metrics().doubleEffects).toBe(0);
    },
  );

  it('gives each step its own attempts and park: a failing second step parks the event with the first decision kept, to its own topic', async () => {
    const { topology, calls } = twoSteps({ decide: (e) => (e.bad ? { action: 'maybe' } : { action: 'refund' }) });
    driver = new TopologyTestDriver(topology);
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1', bad: true }, { partition: 0 });
    input.pipeInput('a', { id: 'a2' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'RETRY', 'PARKED']);
    expect(outcomesAt(driver, 0, 1)).toEqual(['HELD']);
    const parked = readParked(driver);
    expect(parked.map((p) => [p.body.reason, p.body.step, p.body.attempts])).toEqual([
      ['POISON', 'decide', 3],
      ['HELD', 'decide', 0],
    ]);
    expect(readParked(driver, 'classify.parked')).toEqual([]);

    // A person decides for 'decide': the replay uses the kept classification, so classify is not called again.
    await driver.resolve(0, 'a', { decision: { action: 'reject' } });
    await driver.runUntilIdle();
    expect(calls.classify).toEqual(['a1', 'a2']);
    expect(calls.applied.map((c) => [c.id, c.decisions])).toEqual([
      ['a1', { classify: { kind: 'service' }, decide: { action: 'reject' } }],
      ['a2', { classify: { kind: 'service' }, decide: { action: 'refund' } }],
    ]);
    expect(driver.parked()).toEqual([]);
  });

  it("parks an event whose first step fails after that step's own attempts, to that step's topic; the second step is never called", async () => {
    const { topology, calls } = twoSteps({ classify: (e) => (e.bad ? { kind: 'unknown' } : { kind: 'service' }) });
    driver = new TopologyTestDriver(topology);
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1', bad: true }, { partition: 0 });
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['PARKED']);
    expect(readParked(driver, 'classify.parked').map((p) => [p.body.step, p.body.attempts])).toEqual([['classify', 1]]);
    expect(calls.decide).toEqual([]);
  });

  it("paces each step by its own rate gate: a 429 of the second step holds none of the first step's calls", async () => {
    const { topology, calls } = twoSteps({
      // Refused until 10 s: the provider of decide is out of budget, classify's is not.
      decide: (_e, ctx) => {
        if (ctx.clock.now() < 10_000) throw new RateLimited(10_000 - ctx.clock.now());
        return { action: 'refund' };
      },
    });
    driver = new TopologyTestDriver(topology);
    const input = driver.createInputTopic<Ev>('events');
    for (const key of ['a', 'b', 'c']) input.pipeInput(key, { id: `${key}1` }, { partition: 0 });
    await driver.advanceWallClockTime(5_000);
    // decide waits out its Retry-After; classify has answered every event meanwhile.
    expect(calls.classify.sort()).toEqual(['a1', 'b1', 'c1']);
    expect(calls.applied).toEqual([]);
    await driver.runUntilIdle();
    expect(calls.applied.map((c) => c.id).sort()).toEqual(['a1', 'b1', 'c1']);
    // Only decide was refused, so only decide has learned a budget.
    expect(driver.status().budgets.map((b) => b.step)).toEqual(['decide']);
  });

  it.each<DriverMode>(['plain', 'staged', 'exactlyOnce'])(
    'an event written to the log twice (one effect id) runs no step again and its effect applies once (%s)',
    async (mode) => {
      const { topology, calls } = twoSteps({ effectId: ({ value }) => `dispute-${value.id}` });
      driver = new TopologyTestDriver(topology, { mode });
      const input = driver.createInputTopic<Ev>('events');
      input.pipeInput('a', { id: 'a1' }, { partition: 0 });
      await driver.runUntilIdle();
      input.pipeInput('a', { id: 'a1' }, { partition: 0 });
      await driver.runUntilIdle();

      expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED']);
      expect(outcomesAt(driver, 0, 1)).toEqual(['DUPLICATE']);
      expect(calls.classify).toEqual(['a1']);
      expect(calls.decide.map((c) => c.id)).toEqual(['a1']);
      expect(driver.effects()).toHaveLength(1);
    },
  );

  it('after a crash between recording and committing, the redelivered event is a DUPLICATE: no step runs again', async () => {
    const { topology, calls } = twoSteps();
    driver = new TopologyTestDriver(topology);
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' }, { partition: 0 });
    driver.crash({ point: 'recorded-not-committed' });
    await driver.runUntilIdle();
    expect(driver.running).toBe(false);
    driver.restart();
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['DUPLICATE']);
    expect(calls.classify).toEqual(['a1']);
    expect(calls.decide.map((c) => c.id)).toEqual(['a1']);
    expect(driver.effects()).toHaveLength(1);
  });

  it('a crash between the two steps of an unfinished event may run the first step again; the effect applies once', async () => {
    const { topology, calls } = twoSteps({ decide: async (_e, ctx) => sleep(ctx.clock, 1_000, ctx.signal).then(() => ({ action: 'refund' })) });
    driver = new TopologyTestDriver(topology);
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' }, { partition: 0 });
    // classify has answered, decide has been called and not yet answered.
    await driver.advanceWallClockTime(500);
    expect(calls.decide.map((c) => c.id)).toEqual(['a1']);
    driver.crash();
    driver.restart();
    await driver.runUntilIdle();

    expect(calls.classify).toEqual(['a1', 'a1']);
    expect(driver.effects()).toHaveLength(1);
  });
});
