// park({ onExhausted }): what becomes of an event whose attempts ran out. 'park' is covered by
// park.test.ts; here 'dlq', 'skip' and 'fail', each on one partition where a1 (poison) comes
// before b1 and a2, a1's key's next event.
import { afterEach, describe, expect, it } from 'vitest';
import { string } from '../../src/dsl/serde.js';
import { effect } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import type { Disposition } from '../../src/graph/nodes.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { decisionTopology, Decision, outcomesAt, readParked, type Ev, type Out } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close().catch(() => undefined);
  driver = undefined;
});

/** Answers a decision that fails the schema for events marked bad. */
const decide = async (e: Ev) => (e.bad ? { action: 'maybe' } : { action: 'refund' });

async function run(onExhausted: Disposition, exactlyOnce = false) {
  const d = new TopologyTestDriver(decisionTopology(decide, { maxInFlight: 2, attempts: 2, retryDelayMs: 1_000, onExhausted }), {
    commit: 'each',
    mode: exactlyOnce ? 'exactlyOnce' : 'plain',
  });
  driver = d;
  const input = d.createInputTopic<Ev>('events');
  input.pipeInput('a', { id: 'a1', bad: true }, { partition: 0, headers: { trace: 't-1' } });
  input.pipeInput('b', { id: 'b1' }, { partition: 0 });
  input.pipeInput('a', { id: 'a2' }, { partition: 0 });
  return { d, settled: d.runUntilIdle(), out: d.createOutputTopic<Out>('out'), dlq: d.createOutputTopic<string | null>('events.dlq', { value: string() }) };
}

describe("onExhausted: 'dlq'", () => {
  it.each([false, true])('sends the event to <topic>.dlq with its errors and attempts, and its key goes on (exactly-once: %s)', async (exactlyOnce) => {
    const { d, settled, out, dlq } = await run('dlq', exactlyOnce);
    await settled;

    const dead = dlq.readRecordsToList();
    expect(dead).toHaveLength(1);
    expect(dead[0]!.key).toBe('a');
    expect(JSON.parse(dead[0]!.value!)).toEqual({ id: 'a1', bad: true });
    expect(dead[0]!.headers.trace).toBe('t-1');
    expect(dead[0]!.headers['orderly-source']).toBe('events/0/0');
    expect(dead[0]!.headers['orderly-error']).toMatch(/^agentStep 'decide': decision failed its schema: action: /);
    expect(dead[0]!.headers['orderly-attempts']).toBe('2');
    const errors = JSON.parse(dead[0]!.headers['orderly-errors']!) as Array<{ attempt: number; atMs: number; error: string }>;
    expect(errors.map((e) => [e.attempt, e.atMs])).toEqual([
      [1, 0],
      [2, 1_000],
    ]);

    expect(
      d
        .history()
        .filter((h) => h.offset === 0)
        .map((h) => [h.outcome, h.attempt]),
    ).toEqual([
      ['RETRY', 1],
      ['DEAD_LETTERED', 2],
    ]);
    // Not held: a2 ran as soon as a1 left, so a1's key's order is broken on purpose.
    expect(outcomesAt(d, 0, 2)).toEqual(['APPLIED']);
    expect(out.readValuesToList().map((v) => v.id)).toEqual(['b1', 'a2']);
    expect(readParked(d)).toEqual([]);
    expect(d.parked()).toEqual([]);
    expect(d.committed()).toEqual([{ topic: 'events', partition: 0, offset: 3 }]);
  });
});

describe("onExhausted: 'skip'", () => {
  it('commits past the event with no effect, counted as SKIPPED with its last error, and its key goes on', async () => {
    const { d, settled, out, dlq } = await run('skip');
    await settled;

    const a1 = d.history().filter((h) => h.offset === 0);
    expect(a1.map((h) => [h.outcome, h.attempt])).toEqual([
      ['RETRY', 1],
      ['SKIPPED', 2],
    ]);
    expect(a1.at(-1)!.error).toMatch(/^agentStep 'decide': decision failed its schema: /);
    expect(d.metrics().outcomes.SKIPPED).toBe(1);
    expect(out.readValuesToList().map((v) => v.id)).toEqual(['b1', 'a2']);
    expect(dlq.readRecordsToList()).toEqual([]);
    expect(readParked(d)).toEqual([]);
    expect(d.committed()).toEqual([{ topic: 'events', partition: 0, offset: 3 }]);
  });
});

describe("onExhausted: 'fail'", () => {
  it('stops the worker with an error naming the operator, the event and the fix, committing nothing past it', async () => {
    const { d, settled, dlq } = await run('fail');
    await expect(settled).rejects.toThrow(
      /^agentStep 'decide': decision failed its schema: .*, on events\/0@0 \(key "a"\), after 2 attempt\(s\); the park\(\) says onExhausted: 'fail'.*choose onExhausted 'park', 'dlq' or 'skip'$/,
    );
    expect(d.committed().filter((c) => c.offset > 0)).toEqual([]);
    expect(outcomesAt(d, 0, 0)).toEqual(['RETRY']);
    expect(outcomesAt(d, 0, 2)).toEqual([]);
    expect(dlq.readRecordsToList()).toEqual([]);
    expect(readParked(d)).toEqual([]);
  });

  it('applies to a throwing effect too: retried with its decision kept, then the worker stops', async () => {
    const topology = stream<Ev>('events')
      .keyedSerial()
      .agentStep('decide', decide, { schema: Decision })
      .park({ attempts: 2, retryDelayMs: 10, onExhausted: 'fail' })
      .applyOnce(
        effect('fx', (v: { event: Ev; decision: Decision }): Out => {
          throw new Error(`ledger down for ${v.event.id}`);
        }),
      )
      .build();
    driver = new TopologyTestDriver(topology, { commit: 'each' });
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' }, { partition: 0 });
    await expect(driver.runUntilIdle()).rejects.toThrow(/^applyOnce 'fx' threw: ledger down for a1, on events\/0@0 \(key "a"\), after 2 attempt\(s\)/);
    expect(driver.committed().filter((c) => c.offset > 0)).toEqual([]);
  });
});

describe("onExhausted: 'park'", () => {
  it('is the default, and parks the event with its key held as before', async () => {
    const { d, settled } = await run('park');
    await settled;
    expect(outcomesAt(d, 0, 0)).toEqual(['RETRY', 'PARKED']);
    expect(outcomesAt(d, 0, 2)).toEqual(['HELD']);
  });

  it('refuses an unknown disposition, naming the choices', () => {
    expect(() =>
      stream<Ev>('events')
        .keyedSerial()
        .agentStep('decide', decide)
        .park({ attempts: 1, onExhausted: 'drop' as Disposition }),
    ).toThrow("park after 'decide': onExhausted must be one of 'park', 'dlq', 'skip', 'fail', got \"drop\"");
  });
});
