import { afterEach, describe, expect, it } from 'vitest';
import { string } from '../../src/dsl/serde.js';
import { stream } from '../../src/dsl/stream.js';
import { effect } from '../../src/dsl/effect.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { fakeModel } from '../../testkit/fakeModel.js';
import { decisionTopology, outcomesAt, type Ev, type Out } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

function setup() {
  const model = fakeModel<Ev, unknown>({ latencyMs: 100, decide: () => ({ action: 'refund' }) });
  const d = new TopologyTestDriver(decisionTopology(model.decide, { maxInFlight: 2 }), { commit: 'each' });
  driver = d;
  return {
    d,
    model,
    input: d.createInputTopic<Ev>('events'),
    out: d.createOutputTopic<Out>('out'),
    dlq: d.createOutputTopic<string | null>('events.dlq', { value: string() }),
  };
}

describe('undecodable records', () => {
  it('sends a malformed payload to <topic>.dlq with its error in orderly-error, and processes the rest', async () => {
    const { d, model, input, out, dlq } = setup();
    input.pipeInput('k', { id: 'before' }, { partition: 0 });
    input.pipeRaw('k', 'not json{', { partition: 0, headers: { trace: 't-1' } });
    input.pipeInput('k', { id: 'after' }, { partition: 0 });
    await d.runUntilIdle();

    const dead = dlq.readRecordsToList();
    expect(dead).toHaveLength(1);
    expect(dead[0]!.key).toBe('k');
    expect(dead[0]!.value).toBe('not json{');
    expect(dead[0]!.headers['orderly-error']).toMatch(/^events-source: json could not decode the value: /);
    expect(dead[0]!.headers['orderly-source']).toBe('events/0/1');
    expect(dead[0]!.headers.trace).toBe('t-1');
    // Read without a serde, as docs/testing.md shows: JSON where it is JSON, else the text.
    expect(d.createOutputTopic('events.dlq').readValuesToList()).toEqual(['not json{']);

    expect(outcomesAt(d, 0, 1)).toEqual(['DEAD_LETTERED']);
    expect(d.history().find((h) => h.offset === 1)!.error).toBe(dead[0]!.headers['orderly-error']);
    expect(out.readValuesToList().map((v) => v.id)).toEqual(['before', 'after']);
    expect(model.stats().calls).toHaveLength(2);
    expect(d.committed()).toEqual([{ topic: 'events', partition: 0, offset: 3 }]);
  });

  it('sends a tombstone (null value) to the dead-letter topic too', async () => {
    const { d, input, out, dlq } = setup();
    input.pipeRaw('k', null, { partition: 0 });
    input.pipeInput('k', { id: 'after' }, { partition: 0 });
    await d.runUntilIdle();

    const dead = dlq.readRecordsToList();
    expect(dead).toHaveLength(1);
    expect(dead[0]!.value).toBeNull();
    expect(dead[0]!.headers['orderly-error']).toBe('events-source: the record has no value (a tombstone)');
    expect(outcomesAt(d, 0, 0)).toEqual(['DEAD_LETTERED']);
    expect(out.readValuesToList().map((v) => v.id)).toEqual(['after']);
  });

  it('dead-letters bytes that are not UTF-8, and a record whose declared effect id fails', async () => {
    const model = fakeModel<Ev, unknown>({ decide: () => ({ action: 'refund' }) });
    driver = new TopologyTestDriver(
      decisionTopology(model.decide, {
        effectId: ({ value }) => {
          if (value.id === 'no-id') throw new Error('no id');
          return value.id;
        },
      }),
    );
    const input = driver.createInputTopic<Ev>('events');
    const bytes = { name: 'bytes', serialize: (v: Uint8Array) => v, deserialize: (b: Uint8Array) => b };
    const dlq = driver.createOutputTopic<Uint8Array>('events.dlq', { value: bytes });
    input.pipeRaw('k', new Uint8Array([0xff, 0xfe, 0x7b]), { partition: 0 });
    input.pipeInput('k', { id: 'no-id' }, { partition: 0 });
    input.pipeInput('k', { id: 'fine' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['DEAD_LETTERED']);
    expect(outcomesAt(driver, 0, 1)).toEqual(['DEAD_LETTERED']);
    expect(outcomesAt(driver, 0, 2)).toEqual(['APPLIED']);
    const errors = driver
      .history()
      .filter((h) => h.outcome === 'DEAD_LETTERED')
      .map((h) => h.error);
    expect(errors[0]).toMatch(/could not decode the value/);
    expect(errors[1]).toBe('events-source: effectId failed: no id');
    const dead = dlq.readRecordsToList();
    expect(dead.map((r) => r.headers['orderly-error'])).toEqual(errors);
    // Without a serde: bytes that are not UTF-8 come back as they are, not as replacement characters.
    expect(driver.createOutputTopic('events.dlq').readValuesToList()[0]).toEqual(new Uint8Array([0xff, 0xfe, 0x7b]));
    expect([...dead[0]!.value]).toEqual([0xff, 0xfe, 0x7b]);
    expect(model.stats().calls.map((c) => c.effectId)).toEqual(['fine']);
  });

  it('honours a declared dead-letter topic', async () => {
    const topology = stream<{ n: number }>('numbers', { deadLetterTopic: 'numbers-bad' })
      .applyOnce(effect('sum', (v: { n: number }) => v))
      .to('numbers-out')
      .build();
    driver = new TopologyTestDriver(topology);
    const input = driver.createInputTopic<{ n: number }>('numbers');
    input.pipeRaw('x', '{"n":', { partition: 0 });
    input.pipeInput('x', { n: 1 }, { partition: 0 });
    await driver.runUntilIdle();
    expect(driver.createOutputTopic<string>('numbers-bad', { value: string() }).readValuesToList()).toEqual(['{"n":']);
    expect(driver.createOutputTopic<{ n: number }>('numbers-out').readValuesToList()).toEqual([{ n: 1 }]);
  });
});
