import { afterEach, describe, expect, it } from 'vitest';
import { RateLimited } from '../../src/dsl/rateLimited.js';
import type { DecideFn } from '../../src/graph/nodes.js';
import { sleep } from '../../src/ports/clock.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { fakeModel } from '../../testkit/fakeModel.js';
import { decisionTopology, outcomesAt, type Ev, type Out } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

interface Call {
  readonly id: string;
  readonly partition: number;
  readonly atMs: number;
  readonly attempt: number;
}

describe('RateLimited (a 429)', () => {
  it('is not an attempt: no call of the step starts, on any partition, until Retry-After has passed', async () => {
    const calls: Call[] = [];
    let refusals = 1;
    const decide: DecideFn<Ev, unknown> = async (event, ctx) => {
      calls.push({ id: event.id, partition: ctx.record.partition, atMs: ctx.clock.now(), attempt: ctx.attempt });
      await sleep(ctx.clock, 100);
      if (event.id === 'a1' && refusals-- > 0) throw new RateLimited(2_000);
      return { action: 'refund' };
    };
    // attempts: 1, so a 429 counted as an attempt would park a1.
    driver = new TopologyTestDriver(decisionTopology(decide, { attempts: 1 }), { partitions: 2 });
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1' }, { partition: 0 });
    input.pipeInput('a', { id: 'a2' }, { partition: 0 });
    input.pipeInput('b', { id: 'b1' }, { partition: 1 });
    input.pipeInput('b', { id: 'b2' }, { partition: 1 });
    await driver.runUntilIdle();

    // a1 and b1 started together; a1's 429 came back at 100 and blocked every call until 2100,
    // b2 (another partition) included; a1, refused, went first. From that 429 the gate learned a
    // budget of one call and where a window ends, not how long windows are: the window at 2100
    // admits the budget plus one (a1, b2), and as many again once both were answered (a2, at 2200).
    expect(calls.map((c) => [c.id, c.atMs, c.attempt])).toEqual([
      ['a1', 0, 1],
      ['b1', 0, 1],
      ['a1', 2_100, 1],
      ['b2', 2_100, 1],
      ['a2', 2_200, 1],
    ]);
    expect(calls.filter((c) => c.atMs > 100 && c.atMs < 2_100)).toEqual([]);

    const a1 = driver.history().filter((h) => h.partition === 0 && h.offset === 0);
    expect(a1.map((h) => [h.outcome, h.atMs])).toEqual([
      ['RATE_LIMITED', 100],
      ['APPLIED', 2_200],
    ]);
    expect(driver.metrics().rateLimited).toBe(1);
    expect(driver.metrics().outcomes.APPLIED).toBe(4);
    expect(driver.metrics().outcomes.RETRY).toBe(0);
    expect(
      driver
        .createOutputTopic<Out>('out')
        .readValuesToList()
        .map((v) => v.id)
        .sort(),
    ).toEqual(['a1', 'a2', 'b1', 'b2']);
  });

  it('keeps every event flowing against a fake provider that refuses past its limit', async () => {
    const model = fakeModel<Ev, unknown>({
      latencyMs: 200,
      rejectLatencyMs: 50,
      limit: { calls: 2, windowMs: 1_000 },
      decide: () => ({ action: 'reject' }),
    });
    driver = new TopologyTestDriver(decisionTopology(model.decide, { maxInFlight: 4, attempts: 1 }), { partitions: 2 });
    const input = driver.createInputTopic<Ev>('events');
    for (let i = 0; i < 12; i++) input.pipeInput(`k${i % 6}`, { id: `e${i}` }, { partition: i % 2 });
    await driver.runUntilIdle();

    const stats = model.stats();
    expect(stats.accepted).toBe(12);
    expect(stats.refused).toBeGreaterThan(0);
    expect(driver.metrics().rateLimited).toBe(stats.refused);
    expect(driver.metrics().outcomes.APPLIED).toBe(12);
    expect(driver.metrics().outcomes.PARKED).toBe(0);
    // After a refusal, no call reaches the provider before its window ends.
    for (const refused of stats.calls.filter((c) => !c.accepted)) {
      const windowEnd = (Math.floor(refused.atMs / 1_000) + 1) * 1_000;
      const tooEarly = stats.calls.filter((c) => c.atMs >= refused.atMs + 50 && c.atMs < windowEnd);
      expect(tooEarly).toEqual([]);
    }
  });

  it('with the provider limit declared, paces the calls so that none is refused', async () => {
    const limit = { calls: 2, windowMs: 1_000 };
    const model = fakeModel<Ev, unknown>({ latencyMs: 200, limit, decide: () => ({ action: 'reject' }) });
    driver = new TopologyTestDriver(decisionTopology(model.decide, { maxInFlight: 4, attempts: 1, limit }), { partitions: 2 });
    const input = driver.createInputTopic<Ev>('events');
    for (let i = 0; i < 12; i++) input.pipeInput(`k${i % 6}`, { id: `e${i}` }, { partition: i % 2 });
    await driver.runUntilIdle();

    const stats = model.stats();
    expect(stats.refused).toBe(0);
    expect(stats.accepted).toBe(12);
    expect(stats.calls.map((c) => c.atMs)).toEqual([0, 0, 1_000, 1_000, 2_000, 2_000, 3_000, 3_000, 4_000, 4_000, 5_000, 5_000]);
    expect(outcomesAt(driver, 0, 5)).toEqual(['APPLIED']);
  });

  it('learns the budget of one provider window when quiet windows came before the first 429', async () => {
    // The provider allows 5 calls per 10 s; the step declares no limit. Three calls land in the
    // first window, then 37 events arrive at 12 s: the first 429 comes in the second window.
    const windowMs = 10_000;
    const model = fakeModel<Ev, unknown>({ limit: { calls: 5, windowMs }, decide: () => ({ action: 'reject' }) });
    driver = new TopologyTestDriver(decisionTopology(model.decide, { maxInFlight: 20, attempts: 1 }), { partitions: 1 });
    const input = driver.createInputTopic<Ev>('events');
    for (const [n, atMs] of [1_000, 4_000, 7_000].entries()) {
      await driver.advanceWallClockTime(atMs - driver.now());
      input.pipeInput(`quiet-${n}`, { id: `quiet-${n}` });
    }
    await driver.advanceWallClockTime(12_000 - driver.now());
    for (let i = 0; i < 37; i++) input.pipeInput(`k${i}`, { id: `e${i}` });
    await driver.runUntilIdle();

    const stats = model.stats();
    expect(stats.accepted).toBe(40);
    const refusedPerWindow: number[] = [];
    for (const call of stats.calls) {
      const w = Math.floor(call.atMs / windowMs);
      refusedPerWindow[w] = (refusedPerWindow[w] ?? 0) + (call.accepted ? 0 : 1);
    }
    const perWindow = Array.from(refusedPerWindow, (n) => n ?? 0);
    // [10 s, 20 s) is the learning burst: every call sent before the first 429 came back.
    expect(perWindow[0]).toBe(0);
    expect(perWindow[1]).toBeGreaterThan(1);
    // From the next window on, at most one refusal a window; and every window is used in full.
    expect(perWindow.slice(2).every((n) => n <= 1)).toBe(true);
    const acceptedPerWindow = stats.calls.reduce<number[]>((acc, c) => {
      const w = Math.floor(c.atMs / windowMs);
      acc[w] = (acc[w] ?? 0) + (c.accepted ? 1 : 0);
      return acc;
    }, []);
    expect(acceptedPerWindow.slice(1, -1)).toEqual(Array(acceptedPerWindow.length - 2).fill(5));
    expect(driver.metrics().outcomes.APPLIED).toBe(40);
  });
});
