// .shadow(name, handler): the agent step decides in shadow; the handler's decision is the one
// applied. Each event's shadow record goes to <topic>.shadow with its end, disagreements are told
// to the observer by key, and an agent whose attempts run out parks nothing.
import { afterEach, describe, expect, it } from 'vitest';
import { effect, type EffectContext } from '../../src/dsl/effect.js';
import { RateLimited } from '../../src/dsl/rateLimited.js';
import { sleep } from '../../src/ports/clock.js';
import { stream } from '../../src/dsl/stream.js';
import type { EngineObserver } from '../../src/engine/outcomes.js';
import type { ShadowRecord } from '../../src/engine/shadowRecords.js';
import type { DecideContext, DecidedBy } from '../../src/graph/nodes.js';
import { PrometheusExporter } from '../../src/metrics/prometheusExporter.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { Decision, readParked, type Ev } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

interface Applied {
  readonly id: string;
  readonly action: string;
  readonly decidedBy: Readonly<Record<string, DecidedBy>>;
}

/** The agent refunds everything (its answer for bad events fails the schema); the handler rejects ids with an x. */
function topology() {
  const calls: string[] = [];
  const agent = async (e: Ev, ctx: DecideContext) => {
    calls.push(`${e.id}#${ctx.attempt}`);
    return e.bad ? { action: 'maybe' } : { action: 'refund' };
  };
  const handler = (e: Ev): Decision => ({ action: e.id.includes('x') ? 'reject' : 'refund' });
  const built = stream<Ev>('events')
    .keyedSerial({ maxInFlight: 2 })
    .agentStep('decide', agent, { schema: Decision })
    .park({ attempts: 2, retryDelayMs: 100 })
    .shadow('legacy', handler)
    .applyOnce(
      effect('fx', (v: { event: Ev; decision: Decision }, ctx: EffectContext): Applied => ({
        id: v.event.id,
        action: v.decision.action,
        decidedBy: ctx.decidedBy,
      })),
    )
    .to('out')
    .build();
  return { built, calls };
}

describe('shadow', () => {
  it("applies the handler's decision, sends both to <topic>.shadow, and reports each disagreement by key", async () => {
    const { built, calls } = topology();
    const disagreements: Parameters<NonNullable<EngineObserver['shadowDisagreed']>>[0][] = [];
    const exporter = new PrometheusExporter();
    driver = new TopologyTestDriver(built, {
      observer: { ...exporter.observer(), shadowDisagreed: (d) => (disagreements.push(d), exporter.observer().shadowDisagreed?.(d)) },
    });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1' }, { partition: 0 });
    input.pipeInput('b', { id: 'x1' }, { partition: 0 });
    input.pipeInput('a', { id: 'x2' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(calls).toEqual(['a1#1', 'x1#1', 'x2#1']);
    // No agent decision is applied: the handler's are, marked as a rule's.
    expect(driver.createOutputTopic<Applied>('out').readValuesToList()).toEqual([
      { id: 'a1', action: 'refund', decidedBy: { decide: 'rule' } },
      { id: 'x1', action: 'reject', decidedBy: { decide: 'rule' } },
      { id: 'x2', action: 'reject', decidedBy: { decide: 'rule' } },
    ]);
    const shadows = driver.createOutputTopic<ShadowRecord>('events.shadow').readRecordsToList();
    expect(shadows.map((r) => [r.key, r.headers['orderly-effect-id'], r.value.agent, r.value.applied, r.value.agrees])).toEqual([
      ['a', 'events/0/0', { action: 'refund' }, { action: 'refund' }, true],
      ['b', 'events/0/1', { action: 'refund' }, { action: 'reject' }, false],
      ['a', 'events/0/2', { action: 'refund' }, { action: 'reject' }, false],
    ]);
    expect(shadows[0]!.value).toMatchObject({ version: 1, step: 'decide', shadow: 'legacy', effectId: 'events/0/0' });
    expect(disagreements.map((d) => [d.key, d.effectId, d.step, d.shadow])).toEqual([
      ['b', 'events/0/1', 'decide', 'legacy'],
      ['a', 'events/0/2', 'decide', 'legacy'],
    ]);
    const text = await exporter.metrics();
    expect(text).toContain('orderly_shadow_disagreements_total{step="decide"} 2');
    expect(text).toContain('orderly_decisions_total{step="decide",by="rule"} 3');
  });

  it('with maxWaitMs, the handler decides once the agent has not answered in time: an outage of the provider does not hold the applied decisions', async () => {
    const calls: string[] = [];
    // The provider refuses every call for 20 s (Retry-After 5 s), then answers.
    const agent = (e: Ev, ctx: DecideContext) => {
      calls.push(`${e.id}@${ctx.clock.now()}`);
      if (ctx.clock.now() < 20_000) throw new RateLimited(5_000);
      return { action: 'refund' };
    };
    const built = stream<Ev>('events')
      .keyedSerial({ maxInFlight: 2 })
      .agentStep('decide', agent, { schema: Decision })
      .park({ attempts: 2, retryDelayMs: 100 })
      .shadow('legacy', (e: Ev): Decision => ({ action: e.id.includes('x') ? 'reject' : 'refund' }), { maxWaitMs: 1_000 })
      .applyOnce(effect('fx', (v: { event: Ev; decision: Decision }) => ({ id: v.event.id, action: v.decision.action })))
      .to('out')
      .build();
    expect(built.describe()).toContain('maxWaitMs: 1000');
    driver = new TopologyTestDriver(built);
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1' }, { partition: 0 });
    input.pipeInput('b', { id: 'x1' }, { partition: 0 });
    input.pipeInput('a', { id: 'a2' }, { partition: 0 });
    await driver.advanceWallClockTime(2_500);
    // a1 and x1 gave up at 1 s, a2 (behind a1) at 2 s: none waited for the 20 s of refusals.
    expect(driver.createOutputTopic<{ id: string; action: string }>('out').readValuesToList()).toEqual([
      { id: 'a1', action: 'refund' },
      { id: 'x1', action: 'reject' },
      { id: 'a2', action: 'refund' },
    ]);
    // The first call was refused; no call started before its Retry-After had run out.
    expect(calls).toEqual(['a1@0']);
    const shadows = driver.createOutputTopic<ShadowRecord>('events.shadow').readValuesToList();
    expect(new Set(shadows.map((r) => r.agentError))).toEqual(
      new Set(["agentStep 'decide': no decision within the shadow's maxWaitMs (1000 ms): the handler decided without it"]),
    );
    expect(readParked(driver)).toEqual([]);
    // Past the refusals the agent is asked again, and answers within the bound.
    await driver.advanceWallClockTime(20_000);
    input.pipeInput('c', { id: 'c1' }, { partition: 0 });
    await driver.runUntilIdle();
    expect(calls.at(-1)).toMatch(/^c1@/);
    expect(driver.createOutputTopic<ShadowRecord>('events.shadow').readValuesToList().at(-1)).toMatchObject({ agent: { action: 'refund' }, agrees: true });
    expect(driver.committed()).toEqual([{ topic: 'events', partition: 0, offset: 4 }]);
  });

  it('with maxWaitMs, a call still in flight at the bound is given up (aborted, no attempt counted) and the handler decides', async () => {
    const ends: string[] = [];
    const agent = async (_e: Ev, ctx: DecideContext) => {
      await sleep(ctx.clock, 5_000, ctx.signal);
      return { action: 'refund' };
    };
    const built = stream<Ev>('events')
      .keyedSerial({ maxInFlight: 2 })
      .agentStep('decide', agent, { schema: Decision })
      .park({ attempts: 2, retryDelayMs: 100 })
      .shadow('legacy', (): Decision => ({ action: 'reject' }), { maxWaitMs: 1_000 })
      .applyOnce(effect('fx', (v: { event: Ev; decision: Decision }) => ({ id: v.event.id, action: v.decision.action })))
      .to('out')
      .build();
    driver = new TopologyTestDriver(built, { observer: { modelCallEnded: (c) => ends.push(`${c.result}@${c.atMs}`) } });
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' }, { partition: 0 });
    await driver.advanceWallClockTime(1_000);
    expect(driver.createOutputTopic<{ id: string; action: string }>('out').readValuesToList()).toEqual([{ id: 'a1', action: 'reject' }]);
    expect(ends).toEqual(['aborted@1000']);
    expect(driver.history().map((h) => h.outcome)).toEqual(['APPLIED']);
    expect(driver.createOutputTopic<ShadowRecord>('events.shadow').readValuesToList()[0]!.agentError).toMatch(
      /no decision within the shadow's maxWaitMs \(1000 ms\)/,
    );
    await driver.runUntilIdle();
    expect(driver.committed()).toEqual([{ topic: 'events', partition: 0, offset: 1 }]);
  });

  it("parks nothing when the agent's attempts run out: the handler decides, and the shadow record carries the agent's error", async () => {
    const { built, calls } = topology();
    driver = new TopologyTestDriver(built);
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1', bad: true }, { partition: 0 });
    input.pipeInput('a', { id: 'a2' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(calls).toEqual(['a1#1', 'a1#2', 'a2#1']);
    expect(readParked(driver)).toEqual([]);
    expect(driver.history().map((h) => [h.offset, h.outcome])).toEqual([
      [0, 'RETRY'],
      [0, 'APPLIED'],
      [1, 'APPLIED'],
    ]);
    const [failed] = driver.createOutputTopic<ShadowRecord>('events.shadow').readValuesToList();
    expect(failed).toMatchObject({ step: 'decide', applied: { action: 'refund' } });
    expect(failed!.agentError).toMatch(/^agentStep 'decide': decision failed its schema/);
    expect(failed).not.toHaveProperty('agent');
    expect(failed).not.toHaveProperty('agrees');
    expect(driver.committed()).toEqual([{ topic: 'events', partition: 0, offset: 2 }]);
  });

  it("sends the shadow record with the event's outputs: a redelivered event found applied sends both again, under the same effect id", async () => {
    const { built } = topology();
    driver = new TopologyTestDriver(built, { commit: { everyMs: 60_000 } });
    driver.createInputTopic<Ev>('events').pipeInput('b', { id: 'x1' }, { partition: 0 });
    driver.crash({ point: 'recorded-not-committed' });
    await driver.runUntilIdle();
    driver.restart();
    await driver.runUntilIdle();

    expect(driver.history().map((h) => h.outcome)).toEqual(['DUPLICATE']);
    const shadows = driver.createOutputTopic<ShadowRecord>('events.shadow').readRecordsToList();
    const outputs = driver.createOutputTopic<Applied>('out').readRecordsToList();
    expect(shadows.length).toBeGreaterThan(0);
    expect(shadows).toHaveLength(outputs.length);
    for (const r of [...shadows, ...outputs]) expect(r.headers['orderly-effect-id']).toBe('events/0/0');
    expect(shadows.map((r) => r.value.agrees)).toEqual(shadows.map(() => false));
    expect(driver.metrics().doubleEffects).toBe(0);
  });
});
