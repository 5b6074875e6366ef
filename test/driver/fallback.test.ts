// .fallback(name, handler, { afterMs }): while the agent step's calls fail or are refused, with
// none answered, for afterMs, its circuit opens and the handler decides; it half-opens on the
// clock port's schedule, one call probes the step, and an answer closes it. All on virtual time.
import { afterEach, describe, expect, it } from 'vitest';
import { effect, type EffectContext } from '../../src/dsl/effect.js';
import { RateLimited } from '../../src/dsl/rateLimited.js';
import { sleep } from '../../src/ports/clock.js';
import { stream } from '../../src/dsl/stream.js';
import type { DecideContext, DecidedBy } from '../../src/graph/nodes.js';
import { PrometheusExporter } from '../../src/metrics/prometheusExporter.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { Decision, maxListenersWarnings, outcomesAt, readParked, type Ev } from './helpers.js';

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

interface Model {
  /** Virtual ms until which the model is down. */
  readonly downUntilMs: number;
  /** How it is down: a 429 with Retry-After 500 ms, or a throw (a failed attempt). */
  readonly down: 'refuses' | 'fails';
  /** How it takes a `bad` event: an answer the schema refuses (the default), or a throw. */
  readonly bad?: 'refused' | 'throws';
}

/** The model answers `refund` after 100 ms, or is down; the fallback rejects. */
function topology(model: Model, attempts = 3, afterMs = 2_000) {
  const calls: string[] = [];
  const decide = async (e: Ev, ctx: DecideContext) => {
    const atMs = ctx.clock.now();
    calls.push(`${e.id}@${atMs}`);
    if (e.ms) await sleep(ctx.clock, e.ms, ctx.signal);
    if (e.bad && model.bad === 'throws') throw new Error(`the provider answered 500 for ${e.id}`);
    if (e.bad) return { action: 'maybe' };
    if (atMs < model.downUntilMs) {
      if (model.down === 'refuses') throw new RateLimited(500);
      throw new Error('the provider answered 503');
    }
    return { action: 'refund' };
  };
  const built = stream<Ev>('events')
    .keyedSerial({ maxInFlight: 2 })
    .agentStep('decide', decide, { schema: Decision })
    .park({ attempts, retryDelayMs: 1_000 })
    .fallback('rules', (): Decision => ({ action: 'reject' }), { afterMs, halfOpenAfterMs: 3_000 })
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

/** Each output's event id and who decided it at the step. */
function deciders(driver: TopologyTestDriver): Array<[string, DecidedBy | undefined]> {
  return driver
    .createOutputTopic<Applied>('out')
    .readValuesToList()
    .map((v) => [v.id, v.decidedBy.decide]);
}

/** A driver of `built` and the circuit's moves it reports, as `state@atMs`. */
function drivenWithCircuit(built: ReturnType<typeof topology>['built']): TopologyTestDriver & { readonly circuit: string[] } {
  const circuit: string[] = [];
  return Object.assign(new TopologyTestDriver(built, { observer: { circuit: (c) => circuit.push(`${c.state}@${c.atMs}`) } }), { circuit });
}

describe('fallback', () => {
  it('opens after afterMs of refusals, decides the waiting and the new events, half-opens, probes, opens again, and closes on an answer', async () => {
    const { built, calls } = topology({ downUntilMs: 6_000, down: 'refuses' });
    const circuit: string[] = [];
    const exporter = new PrometheusExporter();
    const metrics = exporter.observer();
    const causes: Array<string | undefined> = [];
    const circuitChanged = (c: Parameters<NonNullable<typeof metrics.circuit>>[0]) => {
      circuit.push(`${c.state}@${c.atMs}`);
      if (c.state === 'open') causes.push(c.cause);
      metrics.circuit?.(c);
    };
    driver = new TopologyTestDriver(built, { observer: { ...metrics, circuit: circuitChanged } });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1' }, { partition: 0 });
    input.pipeInput('b', { id: 'b1' }, { partition: 0 });
    await driver.advanceWallClockTime(2_500);
    input.pipeInput('c', { id: 'c1' }, { partition: 0 }); // open: no call
    await driver.advanceWallClockTime(3_000); // 5,500: half-open since 5,000
    input.pipeInput('d', { id: 'd1' }, { partition: 0 }); // the probe, refused: open again
    await driver.advanceWallClockTime(3_500); // 9,000: half-open since 8,500
    input.pipeInput('e', { id: 'e1' }, { partition: 0 }); // the probe, answered: closed
    await driver.runUntilIdle();
    input.pipeInput('f', { id: 'f1' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(circuit).toEqual(['closed@0', 'open@2000', 'half-open@5000', 'open@5500', 'half-open@8500', 'closed@9000']);
    // Each opening says how the step's last call ended.
    expect(causes).toEqual(['refused (a 429)', 'refused (a 429)']);
    // a1 and b1 were refused at 0, 500, 1,000, 1,500 (each Retry-After 500 ms), then the circuit opened.
    expect(calls.filter((c) => c.startsWith('a1') || c.startsWith('b1')).every((c) => Number(c.split('@')[1]) < 2_000)).toBe(true);
    // f1 waits for the rate gate, which learned a budget from the 429s: the circuit has no say in that.
    expect(calls.filter((c) => !c.startsWith('a1') && !c.startsWith('b1')).map((c) => c.split('@')[0])).toEqual(['d1', 'e1', 'f1']);
    expect(calls.filter((c) => c.startsWith('d1') || c.startsWith('e1'))).toEqual(['d1@5500', 'e1@9000']);
    expect(driver.createOutputTopic<Applied>('out').readValuesToList()).toEqual([
      { id: 'a1', action: 'reject', decidedBy: { decide: 'fallback' } },
      { id: 'b1', action: 'reject', decidedBy: { decide: 'fallback' } },
      { id: 'c1', action: 'reject', decidedBy: { decide: 'fallback' } },
      { id: 'd1', action: 'reject', decidedBy: { decide: 'fallback' } },
      { id: 'e1', action: 'refund', decidedBy: { decide: 'agent' } },
      { id: 'f1', action: 'refund', decidedBy: { decide: 'agent' } },
    ]);
    expect(
      driver
        .history()
        .filter((h) => h.outcome === 'APPLIED')
        .map((h) => [h.offset, h.atMs]),
    ).toEqual([
      [0, 2_000],
      [1, 2_000],
      [2, 2_500],
      [3, 5_500],
      [4, 9_000],
      [5, 10_000],
    ]);
    const text = await exporter.metrics();
    expect(text).toContain('orderly_circuit_state{step="decide",state="closed"} 1');
    expect(text).toContain('orderly_circuit_state{step="decide",state="open"} 0');
    expect(text).toContain('orderly_decisions_total{step="decide",by="fallback"} 4');
    expect(text).toContain('orderly_decisions_total{step="decide",by="agent"} 2');
  });

  it('opens on failed attempts too: an event waiting out its retry delay goes to the handler', async () => {
    const { built } = topology({ downUntilMs: 60_000, down: 'fails' }, 5);
    driver = new TopologyTestDriver(built);
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(driver!.history().map((h) => [h.outcome, h.atMs, h.attempt])).toEqual([
      ['RETRY', 0, 1],
      ['RETRY', 1_000, 2],
      ['APPLIED', 2_000, undefined],
    ]);
    expect(driver.createOutputTopic<Applied>('out').readValuesToList()).toEqual([{ id: 'a1', action: 'reject', decidedBy: { decide: 'fallback' } }]);
  });

  it('parks an event whose attempts run out while the circuit is closed: a poison event is not an outage', async () => {
    const { built, calls } = topology({ downUntilMs: 0, down: 'fails' }, 2);
    driver = new TopologyTestDriver(built);
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1', bad: true }, { partition: 0 });
    input.pipeInput('b', { id: 'b1' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'PARKED']);
    expect(readParked(driver).map((p) => p.body.step)).toEqual(['decide']);
    expect(calls).toEqual(['a1@0', 'b1@0', 'a1@1000']);
    expect(driver.createOutputTopic<Applied>('out').readValuesToList()).toEqual([{ id: 'b1', action: 'refund', decidedBy: { decide: 'agent' } }]);
  });

  it('hands events whose attempts run out before afterMs, while other events fail too, to the handler at once: an outage, nothing is parked', async () => {
    // attempts × retryDelayMs (2 × 1,000) is shorter than afterMs (2,000): the last attempts fail at 1,000.
    const { built, calls } = topology({ downUntilMs: 60_000, down: 'fails' }, 2);
    const { circuit } = (driver = drivenWithCircuit(built));
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1' }, { partition: 0 });
    input.pipeInput('b', { id: 'b1' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(calls).toEqual(['a1@0', 'b1@0', 'a1@1000', 'b1@1000']);
    expect(driver.history().map((h) => [h.offset, h.outcome, h.atMs])).toEqual([
      [0, 'RETRY', 0],
      [1, 'RETRY', 0],
      [0, 'APPLIED', 1_000],
      [1, 'APPLIED', 1_000],
    ]);
    expect(readParked(driver)).toEqual([]);
    expect(driver.createOutputTopic<Applied>('out').readValuesToList()).toEqual([
      { id: 'a1', action: 'reject', decidedBy: { decide: 'fallback' } },
      { id: 'b1', action: 'reject', decidedBy: { decide: 'fallback' } },
    ]);
    // At 2,000 (afterMs into the failures) no event that failed waits at the step: the circuit stays
    // closed, and the run's next failure would open it.
    expect(circuit).toEqual(['closed@0']);
  });

  it("parks an event whose calls failed alone, with none answered since, and its key is held: nothing else tells an outage; a poison event's failures do not open the circuit", async () => {
    const { built, calls } = topology({ downUntilMs: 60_000, down: 'fails' }, 2);
    const { circuit } = (driver = drivenWithCircuit(built));
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1' }, { partition: 0 });
    input.pipeInput('a', { id: 'a2' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(calls).toEqual(['a1@0', 'a1@1000']);
    expect(driver.history().map((h) => [h.offset, h.outcome, h.atMs])).toEqual([
      [0, 'RETRY', 0],
      [0, 'PARKED', 1_000],
      [1, 'HELD', 1_000],
    ]);
    expect(circuit).toEqual(['closed@0']);
  });

  it('parks an event whose calls failed while the step answered another event since: poison, however the calls around it fared before', async () => {
    const { built, calls } = topology({ downUntilMs: 500, down: 'fails', bad: 'throws' }, 2);
    const { circuit } = (driver = drivenWithCircuit(built));
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('b', { id: 'b1' }, { partition: 0 }); // fails at 0 (down until 500), answered at 1,000
    await driver.advanceWallClockTime(200);
    input.pipeInput('a', { id: 'a1', bad: true }, { partition: 0 }); // fails at 200 and 1,200
    await driver.runUntilIdle();

    expect(calls).toEqual(['b1@0', 'a1@200', 'b1@1000', 'a1@1200']);
    // a1's failures after b1's answer were a run of their own, and poison's: the circuit stays closed.
    expect(circuit).toEqual(['closed@0']);
    expect(driver.history().map((h) => [h.offset, h.outcome, h.atMs])).toEqual([
      [0, 'RETRY', 0],
      [1, 'RETRY', 200],
      [0, 'APPLIED', 1_000],
      [1, 'PARKED', 1_200],
    ]);
    expect(readParked(driver).map((p) => [p.key, p.body.step])).toEqual([['a', 'decide']]);
    expect(driver.createOutputTopic<Applied>('out').readValuesToList()).toEqual([{ id: 'b1', action: 'refund', decidedBy: { decide: 'agent' } }]);
  });

  describe('tells an event by its place in the log, across a redelivery, a retry and a restart', () => {
    const poison: Model = { downUntilMs: 0, down: 'fails', bad: 'throws' };

    it('a lone poison event redelivered after its partition came back to the same engine is parked, not taken for an outage', async () => {
      const { built, calls } = topology(poison, 3, 10_000);
      const { circuit } = (driver = drivenWithCircuit(built));
      driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1', bad: true }, { partition: 0 });
      await driver.advanceWallClockTime(500);
      await driver.revoke([0]);
      await driver.assign([0]);
      await driver.runUntilIdle();
      // Assigned back at 500, a1 keeps its retry delay: its second call is due at 1,000.
      expect(calls).toEqual(['a1@0', 'a1@1000', 'a1@2000']);
      expect(readParked(driver).map((p) => p.key)).toEqual(['a']);
      expect(driver.createOutputTopic<Applied>('out').readValuesToList()).toEqual([]);
      expect(circuit).toEqual(['closed@0']);
    });

    it('a parked poison event retried by a resolution is parked again, not decided by the fallback', async () => {
      const { built, calls } = topology(poison, 2, 10_000);
      driver = drivenWithCircuit(built);
      driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1', bad: true }, { partition: 0 });
      await driver.advanceWallClockTime(1_500);
      await driver.resolve(0, 'a', { retry: true });
      await driver.advanceWallClockTime(1_500);
      expect(calls).toEqual(['a1@0', 'a1@1000', 'a1@1500', 'a1@2500']);
      expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'PARKED', 'RETRY', 'PARKED']);
      expect(driver.createOutputTopic<Applied>('out').readValuesToList()).toEqual([]);
    });

    it('two poison events one after the other are both parked when the step answered between them; with no answer between, the second is taken for an outage', async () => {
      const { built } = topology(poison, 2, 10_000);
      driver = drivenWithCircuit(built);
      const input = driver.createInputTopic<Ev>('events');
      input.pipeInput('a', { id: 'a1', bad: true }, { partition: 0 });
      await driver.advanceWallClockTime(3_000);
      input.pipeInput('c', { id: 'c1' }, { partition: 0 }); // answered
      input.pipeInput('b', { id: 'b1', bad: true }, { partition: 0 });
      await driver.advanceWallClockTime(3_000);
      input.pipeInput('d', { id: 'd1', bad: true }, { partition: 0 });
      await driver.advanceWallClockTime(3_000);
      expect(readParked(driver).map((p) => p.key)).toEqual(['a', 'b']);
      expect(deciders(driver)).toEqual([
        ['c1', 'agent'],
        ['d1', 'fallback'],
      ]);
    });

    it('an outage whose events come one at a time, each failing alone: the first is parked, the others go to the handler', async () => {
      const { built } = topology({ downUntilMs: 120_000, down: 'fails' }, 3, 10_000);
      const { circuit } = (driver = drivenWithCircuit(built));
      const input = driver.createInputTopic<Ev>('events');
      for (let i = 0; i < 8; i++) {
        input.pipeInput(`k${i}`, { id: `e${i}` }, { partition: 0 });
        await driver.advanceWallClockTime(3_000); // each event's 3 attempts end (at 2,000) before the next comes
      }
      expect(readParked(driver).map((p) => p.key)).toEqual(['k0']);
      expect(
        driver
          .createOutputTopic<Applied>('out')
          .readValuesToList()
          .map((v) => v.decidedBy.decide),
      ).toEqual(Array(7).fill('fallback'));
      // At 10,000 (afterMs with no answer) e3, which came at 9,000 and failed, waits for its retry: the circuit opens.
      expect(circuit.slice(0, 2)).toEqual(['closed@0', 'open@10000']);
    });

    it('an outage whose events come one at a time, across a crash and a restart after the first is parked: only the first is parked', async () => {
      const { built } = topology({ downUntilMs: 120_000, down: 'fails' }, 3, 10_000);
      const { circuit } = (driver = drivenWithCircuit(built));
      const input = driver.createInputTopic<Ev>('events');
      for (let i = 0; i < 4; i++) {
        input.pipeInput(`k${i}`, { id: `e${i}` }, { partition: 0 });
        await driver.advanceWallClockTime(3_000);
        if (i === 0) {
          // k0 was parked at 2,000; the restarted engine learns its failures from its park.
          expect(readParked(driver).map((p) => p.key)).toEqual(['k0']);
          driver.crash();
          driver.restart();
        }
      }
      // k0's park record twice: the restarted engine sent it again (its offset was not committed).
      expect(new Set(readParked(driver).map((p) => p.key))).toEqual(new Set(['k0']));
      expect(deciders(driver)).toEqual([
        ['e1', 'fallback'],
        ['e2', 'fallback'],
        ['e3', 'fallback'],
      ]);
      // The run began with k0's first failure at 0: at 10,000 e3 (come at 9,000) waits for its retry, and the circuit opens, as without the crash.
      expect(circuit.filter((c) => c.startsWith('open'))[0]).toBe('open@10000');
    });

    it('a poison event parked before its partition came back, with an answer after it: a later lone failing event is parked too', async () => {
      const { built } = topology(poison, 3, 10_000);
      driver = drivenWithCircuit(built);
      const input = driver.createInputTopic<Ev>('events');
      input.pipeInput('p', { id: 'p1', bad: true }, { partition: 0 });
      await driver.advanceWallClockTime(2_500);
      input.pipeInput('q', { id: 'q1' }, { partition: 0 }); // answered at 2,500: p1's failures are not of a run any more
      await driver.advanceWallClockTime(500);
      await driver.revoke([0]);
      await driver.assign([0]);
      input.pipeInput('r', { id: 'r1', bad: true }, { partition: 0 });
      await driver.advanceWallClockTime(3_000);
      expect(new Set(readParked(driver).map((p) => p.key))).toEqual(new Set(['p', 'r']));
      expect(deciders(driver)).toEqual([['q1', 'agent']]);
    });

    for (const crash of [false, true]) {
      it(`an outage ${crash ? 'across a crash and a restart' : 'in one engine'}: both failing events go to the handler, none is parked`, async () => {
        const { built } = topology({ downUntilMs: 60_000, down: 'fails' }, 3, 10_000);
        driver = drivenWithCircuit(built);
        const input = driver.createInputTopic<Ev>('events');
        input.pipeInput('a', { id: 'a1' }, { partition: 0 });
        input.pipeInput('b', { id: 'b1', ms: 300 }, { partition: 0 });
        await driver.advanceWallClockTime(1_400);
        if (crash) {
          // The restarted engine's circuit knows nothing; b1's failure stored before the crash tells it.
          driver.crash();
          driver.restart();
        }
        await driver.advanceWallClockTime(3_000);
        expect(readParked(driver)).toEqual([]);
        expect(deciders(driver)).toEqual([
          ['a1', 'fallback'],
          ['b1', 'fallback'],
        ]);
      });
    }
  });

  it('lets any number of waiting events listen for the circuit to open: no MaxListenersExceededWarning', async () => {
    const { built } = topology({ downUntilMs: 60_000, down: 'refuses' });
    const warnings = await maxListenersWarnings(async () => {
      driver = new TopologyTestDriver(built, { partitions: 8 });
      const input = driver.createInputTopic<Ev>('events');
      // 8 partitions × 2 in flight: 16 events wait at the step at once, each listening for the circuit.
      for (let i = 0; i < 32; i++) input.pipeInput(`k${i}`, { id: `e${i}` }, { partition: i % 8 });
      await driver.advanceWallClockTime(3_000);
      await driver.runUntilIdle();
    });
    expect(warnings).toEqual([]);
    // The circuit opened (3 s of refusals, past afterMs) and the fallback decided every event.
    expect(driver!.history().filter((h) => h.outcome === 'APPLIED')).toHaveLength(32);
  });
});
