import { afterEach, describe, expect, it } from 'vitest';
import { effect } from '../../src/dsl/effect.js';
import { string } from '../../src/dsl/serde.js';
import { stream } from '../../src/dsl/stream.js';
import type { DecideFn } from '../../src/graph/nodes.js';
import { sleep } from '../../src/ports/clock.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { decisionTopology, outcomesAt, type Ev, type Out } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

interface Order {
  readonly id: number;
  readonly total: number;
}

describe('stateless operators', () => {
  it('filter drops events (FILTERED), mapValues reshapes them, to() writes them with the input key (FORWARDED)', async () => {
    const topology = stream<Order>('orders')
      .filter((o) => o.total > 0)
      .mapValues((o, key) => `${key}:${o.id}:${o.total * 2}`)
      .to('doubled', { value: string() })
      .build();
    driver = new TopologyTestDriver(topology);
    const input = driver.createInputTopic<Order>('orders');
    input.pipeInput('c1', { id: 1, total: 10 }, { partition: 0 });
    input.pipeInput('c2', { id: 2, total: 0 }, { partition: 0 });
    input.pipeInput('c1', { id: 3, total: 5 }, { partition: 0 });
    await driver.runUntilIdle();

    expect([0, 1, 2].map((o) => outcomesAt(driver!, 0, o))).toEqual([['FORWARDED'], ['FILTERED'], ['FORWARDED']]);
    const out = driver.createOutputTopic<string>('doubled', { value: string() }).readRecordsToList();
    expect(out.map((r) => [r.key, r.value, r.headers['orderly-effect-id']])).toEqual([
      ['c1', 'c1:1:20', 'orders/0/0'],
      ['c1', 'c1:3:10', 'orders/0/2'],
    ]);
    expect(driver.committed()).toEqual([{ topic: 'orders', partition: 0, offset: 3 }]);
  });

  it('filter before the agent step spares the model call', async () => {
    const calls: string[] = [];
    const topology = stream<Ev>('events')
      .filter((e) => !e.id.startsWith('skip'))
      .keyedSerial()
      .agentStep('decide', async (e: Ev) => {
        calls.push(e.id);
        return { action: 'refund' };
      })
      .park({ attempts: 1 })
      .applyOnce(effect('fx', (v: unknown) => v))
      .build();
    driver = new TopologyTestDriver(topology);
    const input = driver.createInputTopic<Ev>('events');
    for (const id of ['a', 'skip-1', 'b']) input.pipeInput('k', { id }, { partition: 0 });
    await driver.runUntilIdle();
    expect(calls).toEqual(['a', 'b']);
    expect(outcomesAt(driver, 0, 1)).toEqual(['FILTERED']);
    expect(driver.effects().map((e) => e.offset)).toEqual([0, 2]);
  });
});

describe('backpressure', () => {
  it('with a buffer smaller than a poll (the partition pauses and resumes) loses, repeats and reorders nothing', async () => {
    const starts: number[] = [];
    const decide: DecideFn<Ev, unknown> = async (_e, ctx) => {
      starts.push(ctx.record.offset);
      await sleep(ctx.clock, 100);
      return { action: 'refund' };
    };
    driver = new TopologyTestDriver(decisionTopology(decide, { maxInFlight: 2 }), { maxBufferedPerPartition: 4, maxPollRecords: 3 });
    const input = driver.createInputTopic<Ev>('events');
    for (let i = 0; i < 20; i++) input.pipeInput(`k${i % 3}`, { id: `${i}` }, { partition: 0 });
    await driver.runUntilIdle();

    expect(driver.metrics().outcomes.APPLIED).toBe(20);
    expect(driver.metrics().orderViolations).toBe(0);
    expect(driver.metrics().redeliveries).toBe(0);
    expect([...starts].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const out = driver.createOutputTopic<Out>('out').readValuesToList();
    for (const k of [0, 1, 2]) {
      const ids = out.map((v) => Number(v.id)).filter((id) => id % 3 === k);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
    }
    expect(driver.committed()).toEqual([{ topic: 'events', partition: 0, offset: 20 }]);
  });
});
