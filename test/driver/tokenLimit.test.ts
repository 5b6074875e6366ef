// A step's declared limit.tokens on the engine's virtual clock: calls wait for room for their
// expected tokens, and a call's reported tokens are what it holds for a window after it ends.
import { afterEach, describe, expect, it } from 'vitest';
import { effect } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import { sleep } from '../../src/ports/clock.js';
import { TopologyError } from '../../src/dsl/topologyError.js';
import type { DecideContext, RateLimit } from '../../src/graph/nodes.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { decisionTopology, type Ev } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close().catch(() => undefined);
  driver = undefined;
});

/** Four events of four keys, each call 100 ms and reporting `reported` tokens; when decide ran, as the provider would see the calls. */
async function callStarts(limit: RateLimit, reported: number | undefined): Promise<number[]> {
  const starts: number[] = [];
  const topology = decisionTopology(
    async (_e: Ev, ctx) => {
      starts.push(ctx.clock.now());
      await sleep(ctx.clock, 100, ctx.signal);
      if (reported !== undefined) ctx.reportTokens(reported);
      return { action: 'refund' };
    },
    { maxInFlight: 4, limit: limit as { calls: number; windowMs: number } },
  );
  await driver?.close();
  const d = new TopologyTestDriver(topology, { commit: 'each' });
  driver = d;
  const input = d.createInputTopic<Ev>('events');
  for (const key of ['a', 'b', 'c', 'd']) input.pipeInput(key, { id: key }, { partition: 0 });
  await d.runUntilIdle();
  return starts;
}

describe('limit.tokens', () => {
  it('starts a call only when the window has room for its expected tokens, holding each call a window after it ends', async () => {
    // 100 tokens a second, 50 expected of each: two at once, the next two once the first two left the window (100 + 1000 ms).
    expect(await callStarts({ tokens: 100, windowMs: 1_000, expectedTokens: 50 }, 50)).toEqual([0, 0, 1_100, 1_100]);
  });

  it('holds a call at the tokens it reported, not the expected count', async () => {
    // 50 expected, 20 used: once the first two end, 40 are held, so a third (50 expected) fits at once; the fourth waits for the window.
    expect(await callStarts({ tokens: 100, windowMs: 1_000, expectedTokens: 50 }, 20)).toEqual([0, 0, 100, 1_100]);
    // Reporting nothing, each call stays held at its 50 expected.
    expect(await callStarts({ tokens: 100, windowMs: 1_000, expectedTokens: 50 }, undefined)).toEqual([0, 0, 1_100, 1_100]);
  });

  it('is refused without calls or tokens', () => {
    expect(() => decisionTopology(async () => ({ action: 'refund' }), { limit: { windowMs: 1_000 } as { calls: number; windowMs: number } })).toThrow(
      TopologyError,
    );
    expect(() => decisionTopology(async () => ({ action: 'refund' }), { limit: { windowMs: 1_000 } as { calls: number; windowMs: number } })).toThrow(
      "agentStep 'decide': limit needs calls, tokens or both per windowMs, e.g. { calls: 60, tokens: 90_000, windowMs: 60_000 }",
    );
  });

  it("is per step: a second step is not held by the first step's token budget", async () => {
    const starts: Record<'first' | 'second', number[]> = { first: [], second: [] };
    const call = (step: 'first' | 'second') => async (_e: unknown, ctx: DecideContext) => {
      starts[step].push(ctx.clock.now());
      await sleep(ctx.clock, 100, ctx.signal);
      ctx.reportTokens(50);
      return { action: 'refund' };
    };
    const topology = stream<Ev>('events')
      .keyedSerial({ maxInFlight: 4 })
      .agentStep('first', call('first'), { limit: { tokens: 100, windowMs: 1_000, expectedTokens: 50 } })
      .park({ attempts: 1 })
      .agentStep('second', call('second'))
      .park({ attempts: 1 })
      .applyOnce(effect('fx', () => undefined))
      .build();
    const d = new TopologyTestDriver(topology, { commit: 'each' });
    driver = d;
    const input = d.createInputTopic<Ev>('events');
    for (const key of ['a', 'b', 'c', 'd']) input.pipeInput(key, { id: key }, { partition: 0 });
    await d.runUntilIdle();
    expect(starts.first).toEqual([0, 0, 1_100, 1_100]);
    // Each second call starts as its first call ends, whatever the first step's window holds.
    expect(starts.second).toEqual([100, 100, 1_200, 1_200]);
  });
});
