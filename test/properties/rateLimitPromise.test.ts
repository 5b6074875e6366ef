import { fc, test } from '@fast-check/vitest';
import { expect } from 'vitest';
import { effect, stream, type Decided } from '../../src/index.js';
import { fakeModel, TopologyTestDriver, type ModelCall } from '../../testkit/index.js';

// The README's rate-limit promise, with no declared limit: from the 429s of two windows the engine
// learns the provider's budget and window length, then spends the budget with at most one refusal a
// window. Quiet windows come first (a few calls, spread out), then a burst; provider, latencies and
// concurrency are drawn per run.

interface Ticket {
  readonly n: number;
}

const scenarioArbitrary = fc
  .record({
    calls: fc.integer({ min: 1, max: 12 }),
    windowMs: fc.integer({ min: 200, max: 20_000 }),
    latencyShare: fc.double({ min: 0, max: 1.5, noNaN: true }),
    rejectLatencyMs: fc.integer({ min: 0, max: 300 }),
    maxInFlight: fc.integer({ min: 1, max: 20 }),
    partitions: fc.integer({ min: 1, max: 3 }),
    quietWindows: fc.integer({ min: 0, max: 4 }),
    quietShares: fc.array(fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), { maxLength: 6 }),
    burstShare: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
    burstPerBudget: fc.integer({ min: 2, max: 6 }),
    keys: fc.integer({ min: 1, max: 40 }),
  })
  .map((d) => {
    const quietMs = d.quietWindows * d.windowMs;
    return {
      limit: { calls: d.calls, windowMs: d.windowMs },
      latencyMs: Math.round(d.latencyShare * d.windowMs),
      rejectLatencyMs: Math.min(d.rejectLatencyMs, d.windowMs - 1),
      maxInFlight: d.maxInFlight,
      partitions: d.partitions,
      quietAtMs: quietMs === 0 ? [] : d.quietShares.map((s) => Math.floor(s * quietMs)).sort((a, b) => a - b),
      burstAtMs: quietMs + Math.floor(d.burstShare * d.windowMs),
      burst: d.burstPerBudget * d.calls + d.maxInFlight,
      keys: d.keys,
    };
  });

type Scenario = typeof scenarioArbitrary extends fc.Arbitrary<infer S> ? S : never;

async function run(scenario: Scenario): Promise<readonly ModelCall[]> {
  const model = fakeModel<Ticket, { ok: true }>({
    limit: scenario.limit,
    latencyMs: scenario.latencyMs,
    rejectLatencyMs: scenario.rejectLatencyMs,
    decide: () => ({ ok: true }),
  });
  const topology = stream<Ticket>('tickets')
    .keyedSerial({ maxInFlight: scenario.maxInFlight })
    .agentStep('decide', model.decide)
    .park({ attempts: 1 })
    .applyOnce(effect('done', ({ event }: Decided<Ticket, { ok: true }>, { state }) => state.put(String(event.n), true)))
    .build();
  const driver = new TopologyTestDriver(topology, { partitions: scenario.partitions });
  try {
    const input = driver.createInputTopic<Ticket>('tickets');
    let n = 0;
    for (const atMs of scenario.quietAtMs) {
      await driver.advanceWallClockTime(atMs - driver.now());
      input.pipeInput(`key-${n % scenario.keys}`, { n });
      n += 1;
    }
    await driver.advanceWallClockTime(scenario.burstAtMs - driver.now());
    for (let i = 0; i < scenario.burst; i++, n++) input.pipeInput(`key-${n % scenario.keys}`, { n });
    await driver.runUntilIdle();
    expect(driver.metrics().outcomes.APPLIED).toBe(n);
    return model.stats().calls;
  } finally {
    await driver.close();
  }
}

/** Refusals in each of the provider's windows, by the time each call reached it. */
function refusalsPerWindow(calls: readonly ModelCall[], windowMs: number): number[] {
  const counts: number[] = [];
  for (const call of calls) {
    const w = Math.floor(call.atMs / windowMs);
    counts[w] = (counts[w] ?? 0) + (call.accepted ? 0 : 1);
  }
  return Array.from(counts, (c) => c ?? 0);
}

/** Whether a refused call's 429 came back before its window ended, so that its Retry-After gave the window's end. */
const gaveAnEnd = (call: ModelCall, scenario: Scenario) =>
  !call.accepted && call.atMs + scenario.rejectLatencyMs < (Math.floor(call.atMs / scenario.limit.windowMs) + 1) * scenario.limit.windowMs;

test.prop([scenarioArbitrary], { numRuns: Number(process.env.ORDERLY_RATE_RUNS ?? 500) })(
  'once the 429s of two windows taught the budget and the window length, at most one refusal a provider window',
  async (scenario) => {
    const { windowMs } = scenario.limit;
    const calls = await run(scenario);
    // The learning windows: the first two whose refusals came back before the window ended (a 429
    // that comes back later carries a Retry-After of 0, which says nothing of where windows end).
    // The first teaches the budget and where a window ends, the second the length.
    const teaching = [...new Set(calls.filter((c) => gaveAnEnd(c, scenario)).map((c) => Math.floor(c.atMs / windowMs)))].slice(0, 2);
    const perWindow = refusalsPerWindow(calls, windowMs);
    const learnedBy = teaching.length < 2 ? perWindow.length : teaching[1]!;
    const after = perWindow.slice(learnedBy + 1);
    expect(
      after.filter((refusals) => refusals > 1),
      `refusals per window: ${perWindow.join(' ')}`,
    ).toEqual([]);
  },
  120_000,
);
