// A user function that throws (filter, mapValues, an effect, a sink's serializer) is a poison
// event, not a stopped worker: parked with its key held when the topology has a park(), retried
// first when it is the effect (an outside system may be down a moment); without a park() the
// engine stops with an error naming the operator, the event and the fix.
import { afterEach, describe, expect, it } from 'vitest';
import { effect } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import { sleep, type Clock } from '../../src/ports/clock.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { Decision, outcomesAt, readParked, type Ev, type Out } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close().catch(() => undefined);
  driver = undefined;
});

const decide = async () => ({ action: 'refund' as const });
/** The effect of every topology here: the decision, sent downstream. */
const sendDecision = effect('fx', (v: { event: Ev; decision: Decision }) => ({ id: v.event.id, action: v.decision.action }) satisfies Out);

describe('a user function that throws', () => {
  it('mapValues: the event is parked with the error, its key held behind it, other keys go on', async () => {
    const topology = stream<Ev>('events')
      .mapValues(
        (e) => {
          if (e.bad) throw new Error(`cannot shape ${e.id}`);
          return e;
        },
        { name: 'shape' },
      )
      .keyedSerial({ maxInFlight: 2 })
      .agentStep('decide', decide, { schema: Decision })
      .park({ attempts: 3 })
      .applyOnce(sendDecision)
      .to('out')
      .build();
    driver = new TopologyTestDriver(topology);
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1', bad: true }, { partition: 0 });
    input.pipeInput('a', { id: 'a2' }, { partition: 0 });
    input.pipeInput('b', { id: 'b1' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['PARKED']);
    expect(outcomesAt(driver, 0, 1)).toEqual(['HELD']);
    expect(outcomesAt(driver, 0, 2)).toEqual(['APPLIED']);
    const parked = readParked(driver);
    expect(parked[0]!.body.reason).toBe('POISON');
    expect(parked[0]!.body.errors.map((e) => e.error)).toEqual(["mapValues 'shape' threw: cannot shape a1"]);
    // Finished durably (parked and held), so committed past them.
    expect(driver.committed()).toEqual([{ topic: 'events', partition: 0, offset: 3 }]);
  });

  it('a thrown value that is not an Error is kept in the error as JSON, not as [object Object]', async () => {
    const topology = stream<Ev>('events')
      .mapValues(
        (e) => {
          if (e.bad) throw { code: 42, reason: 'ledger locked' };
          return e;
        },
        { name: 'shape' },
      )
      .keyedSerial()
      .agentStep('decide', decide, { schema: Decision })
      .park({ attempts: 1 })
      .applyOnce(sendDecision)
      .to('out')
      .build();
    driver = new TopologyTestDriver(topology);
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1', bad: true }, { partition: 0 });
    await driver.runUntilIdle();
    expect(readParked(driver)[0]!.body.errors.map((e) => e.error)).toEqual([`mapValues 'shape' threw: {"code":42,"reason":"ledger locked"}`]);
  });

  it('the effect: retried after the park delay with its decision kept, applied once', async () => {
    let calls = 0;
    let applies = 0;
    const topology = stream<Ev>('events')
      .keyedSerial()
      .agentStep(
        'decide',
        async () => {
          calls += 1;
          return { action: 'refund' as const };
        },
        { schema: Decision },
      )
      .park({ attempts: 3, retryDelayMs: 500, retryJitter: 0 })
      .applyOnce(
        effect('fx', (v: { event: Ev; decision: Decision }, { state }) => {
          applies += 1;
          state.put(v.event.id, applies);
          if (applies < 3) throw new Error('ledger unavailable');
          return { id: v.event.id, action: v.decision.action } satisfies Out;
        }),
      )
      .build();
    driver = new TopologyTestDriver(topology);
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'RETRY', 'APPLIED']);
    expect(calls, 'one model call: the decision is kept across the effect retries').toBe(1);
    expect(
      driver
        .history()
        .filter((h) => h.outcome === 'RETRY')
        .map((h) => [h.atMs, h.error]),
    ).toEqual([
      [0, "applyOnce 'fx' threw: ledger unavailable"],
      [500, "applyOnce 'fx' threw: ledger unavailable"],
    ]);
    expect(driver.effects()).toHaveLength(1);
  });

  it('the effect failing every attempt: the event is parked with each error', async () => {
    const topology = stream<Ev>('events')
      .keyedSerial()
      .agentStep('decide', decide, { schema: Decision })
      .park({ attempts: 2, retryDelayMs: 100, retryJitter: 0 })
      .applyOnce(
        effect('fx', () => {
          throw new Error('ledger unavailable');
        }),
      )
      .build();
    driver = new TopologyTestDriver(topology);
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'PARKED']);
    expect(readParked(driver)[0]!.body.errors.map((e) => [e.attempt, e.error])).toEqual([
      [1, "applyOnce 'fx' threw: ledger unavailable"],
      [2, "applyOnce 'fx' threw: ledger unavailable"],
    ]);
    expect(driver.effects()).toEqual([]);
    expect(driver.parked()).toHaveLength(1);
  });

  it('the effect: its failed attempts are kept in the store, so a crash between two of them resets no count', async () => {
    let calls = 0;
    const topology = stream<Ev>('events')
      .keyedSerial()
      .agentStep('decide', decide, { schema: Decision })
      .park({ attempts: 3, retryDelayMs: 100, retryJitter: 0 })
      .applyOnce(
        effect('fx', () => {
          calls += 1;
          throw new Error('ledger unavailable');
        }),
      )
      .build();
    driver = new TopologyTestDriver(topology);
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' }, { partition: 0 });
    // Two failed attempts, then a crash while the third waits its delay.
    await driver.advanceWallClockTime(150);
    expect(calls).toBe(2);
    driver.crash();
    driver.restart();
    await driver.runUntilIdle();

    expect(calls, 'the third attempt is the last one, after the restart too').toBe(3);
    expect(readParked(driver)[0]!.body.errors.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(driver.effects()).toEqual([]);
  });

  it('without a park(), the engine stops naming the operator, the event and the fix, and commits nothing past it', async () => {
    const topology = stream<Ev>('events')
      .filter(
        (e) => {
          if (e.bad) throw new Error('no rule for this one');
          return true;
        },
        { name: 'screen' },
      )
      .to('out')
      .build();
    driver = new TopologyTestDriver(topology, { commit: 'each' });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1' }, { partition: 0 });
    input.pipeInput('a', { id: 'a2', bad: true }, { partition: 0 });
    input.pipeInput('a', { id: 'a3' }, { partition: 0 });
    await expect(driver.runUntilIdle()).rejects.toThrow(
      /filter 'screen' threw: no rule for this one, on events\/0@1 \(key "a"\); this topology has no park\(\).*fix the function/,
    );
    const committed = driver.committed().find((c) => c.partition === 0)?.offset ?? 0;
    expect(committed).toBeLessThanOrEqual(1);
  });
});

describe('a decide that never answers', () => {
  it('runUntilIdle names the step and the event of the call with no answer, and the fix', async () => {
    const topology = stream<Ev>('events')
      .keyedSerial({ maxInFlight: 2 })
      .agentStep('classify', async () => ({ action: 'refund' as const }), { schema: Decision })
      .park({ attempts: 3 })
      .mapValues(({ event }) => event)
      .agentStep('decide', (e) => (e.id === 'a1' ? new Promise<Decision>(() => undefined) : { action: 'refund' as const }), { schema: Decision })
      .park({ attempts: 3 })
      .applyOnce(sendDecision)
      .to('out')
      .build();
    driver = new TopologyTestDriver(topology);
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1' }, { partition: 0 });
    input.pipeInput('b', { id: 'b1' }, { partition: 0 });
    const error = await driver.runUntilIdle().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toContain(
      "1 events are in flight and nothing is scheduled; unended: step 'decide' for effect id events/0/0 has not answered: a decide or effect function awaits something other than ctx.clock",
    );
    expect(error?.message).toContain("until its timeoutMs (the agentStep's or the effect's options) fails it");
  });

  it('an effect that never ends is named as what follows the step that answered, and the effect can wait on ctx.clock instead', async () => {
    const build = (wait: (ctx: { clock: Clock; signal: AbortSignal }) => Promise<unknown>) =>
      stream<Ev>('events')
        .keyedSerial()
        .agentStep('decide', () => ({ action: 'refund' as const }), { schema: Decision })
        .park({ attempts: 3 })
        .applyOnce(
          effect('ledger', async ({ event }: { event: Ev; decision: Decision }, ctx) => {
            await wait(ctx);
            return { id: event.id };
          }),
        )
        .to('out')
        .build();
    driver = new TopologyTestDriver(build(() => new Promise(() => undefined)));
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
    await expect(driver.runUntilIdle()).rejects.toThrow(
      "unended: effect id events/0/0: step 'decide' answered, and what follows it (the effect 'ledger', or a later step) has not ended",
    );
    await driver.close();

    // The same outside call as a stand-in with 2 s of latency on the virtual clock.
    driver = new TopologyTestDriver(build(({ clock, signal }) => sleep(clock, 2_000, signal)));
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
    await driver.runUntilIdle();
    expect(driver.effects().map((e) => [e.effectId, e.recordedAtMs])).toEqual([['events/0/0', 2_000]]);
  });
});
