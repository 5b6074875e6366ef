import { afterEach, describe, expect, it } from 'vitest';
import type { DecideFn } from '../../src/graph/nodes.js';
import { sleep } from '../../src/ports/clock.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { decisionTopology, type Ev, type Out } from './helpers.js';

interface Span {
  readonly key: string;
  readonly partition: number;
  readonly offset: number;
  readonly startMs: number;
  endMs?: number;
}

/** A decide that sleeps `event.ms` on the engine's clock and records when each call starts and ends. */
function instrumented() {
  const spans: Span[] = [];
  const live = new Map<number, number>();
  const liveKeys = new Set<string>();
  let maxLive = 0;
  let sameKeyOverlaps = 0;
  const decide: DecideFn<Ev, unknown> = async (event, ctx) => {
    const { partition, offset } = ctx.record;
    const laneKey = `${partition}/${ctx.key}`;
    if (liveKeys.has(laneKey)) sameKeyOverlaps += 1;
    liveKeys.add(laneKey);
    live.set(partition, (live.get(partition) ?? 0) + 1);
    maxLive = Math.max(maxLive, live.get(partition)!);
    const span: Span = { key: ctx.key!, partition, offset, startMs: ctx.clock.now() };
    spans.push(span);
    await sleep(ctx.clock, event.ms ?? 0);
    span.endMs = ctx.clock.now();
    live.set(partition, live.get(partition)! - 1);
    liveKeys.delete(laneKey);
    return { action: 'refund' };
  };
  return { decide, spans, maxLive: () => maxLive, sameKeyOverlaps: () => sameKeyOverlaps };
}

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

describe('keyedSerial', () => {
  it('runs at most maxInFlight per partition, never two of one key, and each key in log order', async () => {
    const model = instrumented();
    driver = new TopologyTestDriver(decisionTopology(model.decide, { maxInFlight: 3 }), { partitions: 2 });
    const input = driver.createInputTopic<Ev>('events');
    // A slow key 'a' with a backlog, and quick keys around it, on both partitions.
    const plan: Array<[string, number]> = [
      ['a', 1_000],
      ['a', 1_000],
      ['b', 100],
      ['a', 1_000],
      ['c', 300],
      ['b', 200],
      ['d', 50],
      ['c', 300],
      ['e', 700],
      ['b', 100],
      ['a', 10],
      ['f', 400],
      ['d', 50],
    ];
    for (const partition of [0, 1]) {
      plan.forEach(([key, ms], i) => input.pipeInput(key, { id: `${partition}-${key}-${i}`, ms }, { partition }));
    }
    await driver.runUntilIdle();

    expect(model.spans).toHaveLength(plan.length * 2);
    expect(model.spans.every((s) => s.endMs !== undefined)).toBe(true);
    expect(model.maxLive()).toBe(3);
    expect(model.sameKeyOverlaps()).toBe(0);

    // Per partition: at no moment more than 3 calls in flight (half-open spans).
    for (const partition of [0, 1]) {
      const spans = model.spans.filter((s) => s.partition === partition);
      for (const s of spans) {
        const overlapping = spans.filter((o) => o.startMs <= s.startMs && o.endMs! > s.startMs);
        expect(overlapping.length).toBeLessThanOrEqual(3);
      }
    }
    // Per key: starts in log order, each after the one before it ended.
    const byKey = new Map<string, Span[]>();
    for (const s of model.spans) byKey.set(`${s.partition}/${s.key}`, [...(byKey.get(`${s.partition}/${s.key}`) ?? []), s]);
    for (const spans of byKey.values()) {
      const offsets = spans.map((s) => s.offset);
      expect(offsets).toEqual([...offsets].sort((x, y) => x - y));
      for (let i = 1; i < spans.length; i++) expect(spans[i]!.startMs).toBeGreaterThanOrEqual(spans[i - 1]!.endMs!);
    }
    // The quick keys were not held behind the slow one: all of 'b' was done before a's second event started.
    const p0 = byKey.get('0/a')!;
    const lastB = byKey.get('0/b')!.at(-1)!;
    expect(lastB.endMs!).toBeLessThan(p0[1]!.startMs);

    const metrics = driver.metrics();
    expect(metrics.outcomes.APPLIED).toBe(plan.length * 2);
    expect(metrics.orderViolations).toBe(0);
    const out = driver.createOutputTopic<Out>('out').readRecordsToList();
    for (const partition of [0, 1]) {
      const aIds = out.filter((r) => r.key === 'a' && r.value.id.startsWith(`${partition}-`)).map((r) => r.value.id);
      expect(aIds).toEqual([0, 1, 3, 10].map((i) => `${partition}-a-${i}`));
    }
  });

  it('with maxInFlight 1 runs one event at a time per partition, in log order, across keys', async () => {
    const model = instrumented();
    driver = new TopologyTestDriver(decisionTopology(model.decide, { maxInFlight: 1 }));
    const input = driver.createInputTopic<Ev>('events');
    ['x', 'y', 'z', 'x', 'y'].forEach((key, i) => input.pipeInput(key, { id: `${i}`, ms: 100 * (5 - i) }, { partition: 0 }));
    await driver.runUntilIdle();
    expect(model.maxLive()).toBe(1);
    expect(model.spans.map((s) => s.offset)).toEqual([0, 1, 2, 3, 4]);
    expect(model.spans.map((s) => s.startMs)).toEqual([0, 500, 900, 1_200, 1_400]);
    expect(model.spans.at(-1)!.endMs).toBe(1_500);
  });

  it('runs events without a key each in a lane of its own, in parallel', async () => {
    const model = instrumented();
    driver = new TopologyTestDriver(decisionTopology(model.decide, { maxInFlight: 4 }));
    const input = driver.createInputTopic<Ev>('events');
    for (let i = 0; i < 4; i++) input.pipeInput(null, { id: `${i}`, ms: 1_000 }, { partition: 0 });
    await driver.runUntilIdle();
    expect(model.spans.map((s) => s.startMs)).toEqual([0, 0, 0, 0]);
    expect(driver.metrics().outcomes.APPLIED).toBe(4);
  });
  it("runs more than 10 calls of a partition at once without a listener-leak warning: they share the partition's abort signal", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const model = instrumented();
      driver = new TopologyTestDriver(decisionTopology(model.decide, { maxInFlight: 16 }));
      const input = driver.createInputTopic<Ev>('events');
      for (let i = 0; i < 16; i++) input.pipeInput(`k${i}`, { id: `e${i}`, ms: 1_000 }, { partition: 0 });
      await driver.runUntilIdle();
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(model.maxLive()).toBe(16);
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });
});
