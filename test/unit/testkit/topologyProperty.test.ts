// topologyProperty's own behaviour: a broken guarantee is caught and told in words, a failure
// replays from its seed and path, a user-level invariant is checked, a dlq disposition is noted
// rather than failed, and the declared limit is kept per engine process.
import fc from 'fast-check';
import { z } from 'zod';
import { describe, expect, test } from 'vitest';
import { effect, stream, type DecideFn, type Decided } from '../../../src/index.js';
import { fakeModel, keyedEvents, topologyInvariants, topologyProperty, TopologyTestDriver, type TopologyRunInput } from '../../../testkit/index.js';
import { inspectStandIn, returnEvents, returnsTopology, type PricedReturn, type Return } from '../../properties/topologies/returns.js';

const returnsProperty = (extra: Partial<Parameters<typeof topologyProperty<Return>>[0]> = {}) =>
  topologyProperty<Return>({
    topology: (decide) => returnsTopology(decide<PricedReturn, unknown>('inspect')),
    events: returnEvents,
    model: { decide: (r: PricedReturn) => inspectStandIn(r), latencyMs: { min: 0, max: 2_000 } },
    resolutions: { decision: () => ({ refund: false, reason: 'a person refused it' }) },
    ...extra,
  });

/** The error fast-check throws for a failing property, with its cause's message. */
async function failureOf(property: fc.IAsyncProperty<[unknown]>, params: fc.Parameters<[unknown]>): Promise<string> {
  try {
    await fc.assert(property, params);
  } catch (error) {
    const cause = (error as Error & { cause?: Error }).cause;
    return `${(error as Error).message}\n${cause?.message ?? ''}`;
  }
  throw new Error('the property held: the canary found nothing');
}

describe('a broken guarantee is caught, and told in words', () => {
  test('a log that commits past what it was asked: commit-past-unfinished, with the partition and offsets, the seed and path, the shrunk input', async () => {
    const prop = returnsProperty({ driverFaults: { commitAheadBy: 2 }, crashes: false, resolutions: false });
    const message = await failureOf(prop.property as fc.IAsyncProperty<[unknown]>, { numRuns: 200, seed: 42 });
    expect(message).toMatch(/seed: 42, path: "[\d:]+"/);
    expect(message).toContain('Counterexample: [{"mode":');
    expect(message).toMatch(/commit-past-unfinished: partition \d+ was committed from \d+ to \d+ at \d+ ms while offset \d+ had not finished/);
    expect(message).toMatch(/events \(\d+\), as placed:\n {2}partition \d+ offset 0: key "c\d"/);
  });

  test('the report tells the resolutions drawn from those the run gave: none when no key was parked', async () => {
    const prop = returnsProperty({ driverFaults: { commitAheadBy: 2 }, crashes: false });
    const message = await failureOf(prop.property as fc.IAsyncProperty<[unknown]>, { numRuns: 200, seed: 42 });
    // Shrunk to a stream whose keys never park: the resolutions drawn were never given.
    expect(message).toMatch(/resolutions: (decision|discard)(, (decision|discard))* \(drawn, given in turn; none given: no key was parked at the end\)/);
  });

  test('the report counts the resolutions given when keys were parked', async () => {
    // Every event's inspection is refused (poison), so every key parks; an invariant fails any run that resolved one.
    const prop = returnsProperty({
      crashes: false,
      model: { decide: () => ({ refund: 'not a boolean' }), latencyMs: { min: 0, max: 10 } },
      userInvariants: { 'fails once a key was resolved': (run) => (run.driver.resolutions().length > 0 ? ['the canary'] : []) },
    });
    const message = await failureOf(prop.property as fc.IAsyncProperty<[unknown]>, { numRuns: 20, seed: 5 });
    expect(message).toMatch(/resolutions: (decision|discard)(, (decision|discard))* \(drawn, given in turn; [1-9]\d* given\)/);
  });

  test('a failure replays from its seed and path, to the same shrunk input', async () => {
    const prop = returnsProperty({ driverFaults: { commitAheadBy: 2 }, crashes: false, resolutions: false });
    const first = await fc.check(prop.property, { numRuns: 200, seed: 7 });
    expect(first.failed).toBe(true);
    const again = await fc.check(prop.property, { seed: first.seed, path: first.counterexamplePath!, endOnFailure: true });
    expect(again.failed).toBe(true);
    expect(again.counterexample).toEqual(first.counterexample);
  });

  test('a user-level invariant that does not hold fails under its own name, shrunk to a small stream', async () => {
    const prop = returnsProperty({
      userInvariants: {
        'nothing over 50 is refunded': (run) =>
          (run.outputs.get('refunds') ?? []).flatMap((r) =>
            (r.value as { refundCents: number }).refundCents > 5_000 ? [`return ${(r.value as { returnId: string }).returnId} was refunded`] : [],
          ),
      },
    });
    // The stand-in refunds up to 5,000 cents only: the invariant holds, and the property passes.
    await fc.assert(prop.property, { numRuns: 50, seed: 3 });
    const strict = returnsProperty({
      userInvariants: {
        'nothing is refunded': (run) =>
          (run.outputs.get('refunds') ?? []).flatMap((r) =>
            (r.value as { refundCents: number }).refundCents > 0 ? [`return ${(r.value as { returnId: string }).returnId} was refunded`] : [],
          ),
      },
    });
    const message = await failureOf(strict.property as fc.IAsyncProperty<[unknown]>, { numRuns: 200, seed: 3 });
    expect(message).toMatch(/user-invariant 'nothing is refunded': return r-0 was refunded/);
    // Shrunk: one event is enough.
    expect(message).toContain('events (1), as placed:');
  });
});

describe('a run that fails is told as a violation, with its input', () => {
  test('keys that every resolution parks again (an effect that throws on the decision given): run-failed, naming the key and its last error', async () => {
    const ledger = effect('ledger', ({ event, decision }: Decided<PricedReturn, { refund: boolean; reason: string }>) => {
      if (!decision.refund && event.note === 'scratched') throw new Error(`the ledger refuses a refusal of ${event.returnId}`);
      return { returnId: event.returnId };
    });
    const prop = topologyProperty<Return>({
      topology: (decide) =>
        stream<Return>('returns')
          .mapValues((r): PricedReturn => ({ ...r, totalCents: r.quantity * r.unitCents }))
          .keyedSerial()
          .agentStep('inspect', decide<PricedReturn, unknown>('inspect'), { schema: z.object({ refund: z.boolean(), reason: z.string() }) })
          .park({ attempts: 1 })
          .applyOnce(ledger)
          .to('refunds')
          .build(),
      events: returnEvents,
      model: { decide: () => ({ refund: false, reason: 'no' }) },
      crashes: false,
      resolutions: { decision: () => ({ refund: false, reason: 'a person refused it' }) },
    });
    const message = await failureOf(prop.property as fc.IAsyncProperty<[unknown]>, { numRuns: 200, seed: 5 });
    expect(message).toContain('topologyProperty: 1 violation (mode');
    expect(message).toMatch(
      /run-failed: topologyProperty: 1 parked key was still left after 100 rounds of resolutions: key 'c\d' of partition 0, parked at step 'inspect' after 1 attempts, last error: applyOnce 'ledger' threw: the ledger refuses a refusal of r-0\. Each round parked them again/,
    );
    // Shrunk to the one event, printed as drawn (the run ended before its checks).
    expect(message).toMatch(/events \(1\), as drawn:\n {2}key "c\d", value \{"customer":"c\d"/);
  });
});

describe("the opt-in 'decision-refused'", () => {
  test('catches a schema that refuses what the stand-in answers for events it did not declare poison; declared ones pass', async () => {
    // The schema allows reasons of at most 10 characters; the stand-in answers longer ones for returns over 50.
    const strict = z.object({ refund: z.boolean(), reason: z.string().max(10) });
    const property = (poison?: (r: PricedReturn) => boolean) =>
      topologyProperty<Return>({
        topology: (decide) =>
          stream<Return>('returns')
            .mapValues((r): PricedReturn => ({ ...r, totalCents: r.quantity * r.unitCents }))
            .keyedSerial()
            .agentStep('inspect', decide<PricedReturn, unknown>('inspect'), { schema: strict })
            .park({ attempts: 2 })
            .applyOnce(effect('verdicts', ({ event }: Decided<PricedReturn, z.infer<typeof strict>>) => ({ returnId: event.returnId })))
            .to('refunds')
            .build(),
        events: returnEvents,
        model: {
          decide: (r: PricedReturn) => ({ refund: r.totalCents <= 5_000, reason: r.totalCents <= 5_000 ? 'small' : 'a large one, needs a look' }),
          ...(poison ? { poison: (value: unknown) => poison(value as PricedReturn), poisonDecision: { refund: 'maybe' } } : {}),
        },
        invariants: [...topologyInvariants, 'decision-refused'],
        crashes: false,
      });
    const message = await failureOf(property().property as fc.IAsyncProperty<[unknown]>, { numRuns: 200, seed: 11 });
    expect(message).toMatch(
      /decision-refused: offset 0 of partition 0 \(key "c\d"\): step 'inspect' refused the stand-in's answer, and the stand-in did not declare the event poison \(reason: /,
    );
    // Declared poison, the same answers are expected refusals: the property holds.
    await fc.assert(property((r) => r.totalCents > 5_000).property, { numRuns: 100, seed: 11 });
  });
});

describe("the opt-in 'row-shared-by-keys'", () => {
  test('catches rows written by the effects of two keys while keys run side by side; rows of one key pass', async () => {
    const property = (row: (r: PricedReturn) => string) =>
      topologyProperty<Return>({
        topology: (decide) =>
          stream<Return>('returns')
            .mapValues((r): PricedReturn => ({ ...r, totalCents: r.quantity * r.unitCents }))
            .keyedSerial({ maxInFlight: 4 })
            .agentStep('inspect', decide<PricedReturn, unknown>('inspect'), { schema: z.object({ refund: z.boolean(), reason: z.string() }) })
            .park({ attempts: 2 })
            .applyOnce(
              effect('refund-totals', ({ event }: Decided<PricedReturn, { refund: boolean }>, { state }) => {
                state.put(row(event), (state.get<number>(row(event)) ?? 0) + event.totalCents);
                return { returnId: event.returnId };
              }),
            )
            .to('refunds')
            .build(),
        events: returnEvents,
        model: { decide: () => ({ refund: true, reason: 'fine' }) },
        invariants: [...topologyInvariants, 'row-shared-by-keys'],
        crashes: false,
      });
    // One total for all customers: every customer's refund adds to the same row.
    const message = await failureOf(property(() => 'all').property as fc.IAsyncProperty<[unknown]>, { numRuns: 200, seed: 13 });
    expect(message).toMatch(
      /row-shared-by-keys: row "all" of partition 0 was written by the effects of keys "c\d", "c\d": keys run side by side \(maxInFlight 4\), so one can lose the other's update/,
    );
    // One total per customer (the key): the property holds.
    await fc.assert(property((r) => r.customer).property, { numRuns: 100, seed: 13 });
  });
});

describe('what the driver observed, not what the engine said', () => {
  test('a held event that its replay filtered, the engine crashing before it said so, has ended: neither lost nor out of order', async () => {
    const prop = returnsProperty();
    const customer = (quantity: number, note: string, returnId: string) => ({ key: 'c1', value: { customer: 'c1', quantity, unitCents: 100, note, returnId } });
    for (const mode of ['plain', 'staged'] as const) {
      const run = await prop.run({
        mode,
        partitions: 1,
        commit: 'each',
        // r-0 is parked; r-1 (empty: filtered) and r-2 are held behind it.
        events: [customer(1, 'garbled', 'r-0'), customer(0, '', 'r-1'), customer(1, '', 'r-2')],
        crashes: [],
        resolutions: ['discard'],
        // The crash comes just after the replay deleted r-1's hold, before the engine reported FILTERED.
        replayCrash: { nth: 2, restartAfterMs: 0 },
        model: { latencyMs: 0, failureShare: 0 },
        seed: 0,
      });
      try {
        expect(run.driver.history().some((h) => h.offset === 1 && h.outcome === 'FILTERED')).toBe(false);
        expect((await prop.check(run)).violations).toEqual([]);
        expect(run.driver.effects().map((e) => e.offset)).toEqual([2]);
      } finally {
        await run.driver.close();
      }
    }
  });
});

describe('dispositions', () => {
  const Answer = z.object({ ok: z.literal(true) });
  const applied = effect('applied', ({ event }: Decided<{ n: number; bad: boolean }, z.infer<typeof Answer>>, { state }) => {
    state.put(String(event.n), true);
    return event;
  });
  const dlqTopology = (decide: DecideFn<{ n: number; bad: boolean }, unknown>) =>
    stream<{ n: number; bad: boolean }>('jobs')
      .keyedSerial({ maxInFlight: 2 })
      .agentStep('check', decide, { schema: Answer })
      .park({ attempts: 2, onExhausted: 'dlq' })
      .applyOnce(applied)
      .to('done')
      .build();

  test("a dlq disposition breaks a key's order on purpose: the check notes it instead of failing", async () => {
    const prop = topologyProperty<{ n: number; bad: boolean }>({
      topology: (decide) => dlqTopology(decide('check')),
      events: keyedEvents(fc.record({ n: fc.nat(), bad: fc.boolean() })),
      model: { decide: () => ({ ok: true }), poison: (e: { bad: boolean }) => e.bad },
    });
    await fc.assert(prop.property, { numRuns: 100, seed: 5 });
    const input: TopologyRunInput<{ n: number; bad: boolean }> = {
      mode: 'plain',
      partitions: 1,
      commit: 'each',
      events: [
        { key: 'k', value: { n: 1, bad: true } },
        { key: 'k', value: { n: 2, bad: false } },
      ],
      crashes: [],
      resolutions: [],
      model: { latencyMs: 10, failureShare: 0 },
      seed: 1,
    };
    const run = await prop.run(input);
    try {
      const { violations, notes } = await prop.check(run);
      expect(violations).toEqual([]);
      expect(notes).toEqual([
        `offset 0 of partition 0 (key "k") was dead-lettered (park({ onExhausted: 'dlq' })) after 2 attempts: the later events of its key went on without it, so per-key order is broken for that key on purpose`,
      ]);
    } finally {
      await run.driver.close();
    }
  });
});

describe('the declared limit across restarts: kept per engine process', () => {
  const limit = { calls: 2, windowMs: 10_000 };
  const build = (decide: DecideFn<{ n: number }, unknown>) =>
    stream<{ n: number }>('calls')
      .keyedSerial({ maxInFlight: 4 })
      .agentStep('step', decide, { schema: z.object({ n: z.number() }), limit })
      .park({ attempts: 2 })
      .applyOnce(effect('noted', ({ event }: Decided<{ n: number }, { n: number }>) => event))
      .build();

  async function run(crash: boolean) {
    const model = fakeModel<{ n: number }, { n: number }>({ latencyMs: 1_000, limit, decide: (e) => e });
    const driver = new TopologyTestDriver(build(model.decide), { partitions: 1, commit: 'each' });
    const input = driver.createInputTopic<{ n: number }>('calls');
    for (let n = 0; n < 4; n++) input.pipeInput(`k${n}`, { n });
    if (crash) {
      driver.crash({ at: 1_500 });
      await driver.advanceWallClockTime(1_500);
      driver.restart();
    }
    await driver.runUntilIdle();
    const effects = driver.effects().map((e) => e.offset);
    await driver.close();
    return { calls: model.stats().calls, effects };
  }

  test('without a restart the engine is never refused', async () => {
    const { calls, effects } = await run(false);
    expect(calls.filter((c) => !c.accepted)).toEqual([]);
    expect(effects.sort()).toEqual([0, 1, 2, 3]);
  });

  test('a restart within the window its predecessor used may meet a 429, only there, and every event still ends once', async () => {
    const { calls, effects } = await run(true);
    const refused = calls.filter((c) => !c.accepted);
    expect(refused.length).toBeGreaterThan(0);
    const windowOf = (atMs: number) => Math.floor(atMs / limit.windowMs);
    for (const call of refused) {
      expect(call.instance).toBe('engine-2');
      expect(calls.some((c) => c.instance === 'engine-1' && windowOf(c.atMs) === windowOf(call.atMs))).toBe(true);
    }
    expect(effects.sort()).toEqual([0, 1, 2, 3]);
  });
});

describe('several agent steps', () => {
  test("a resolution's decision is told which step parked the event, so that it passes that step's schema", async () => {
    const Size = z.object({ size: z.enum(['small', 'large']) });
    const Verdict = z.object({ approve: z.boolean() });
    type Claim = { claimId: string; amount: number };
    const verdicts = effect('claim-verdicts', ({ event, decision }: Decided<Claim, z.infer<typeof Verdict>>, { state }) => {
      state.put(event.claimId, decision);
      return { claimId: event.claimId, ...decision };
    });
    // Poison at either step: an odd amount parks at 'size', an even one at 'verdict'.
    const poisoned = (claim: Claim) => claim.amount % 5 === 0;
    const property = topologyProperty<Claim>({
      topology: (decide) =>
        stream<Claim>('claims')
          .keyedSerial({ maxInFlight: 2 })
          .agentStep('size', decide<Claim, unknown>('size'), { schema: Size })
          .park({ attempts: 2, retryDelayMs: 10 })
          .mapValues(({ event }) => event)
          .agentStep('verdict', decide<Claim, unknown>('verdict'), { schema: Verdict })
          .park({ attempts: 2, retryDelayMs: 10 })
          .applyOnce(verdicts)
          .to('claim-verdicts')
          .build(),
      events: keyedEvents(fc.record({ claimId: fc.string({ minLength: 1, maxLength: 4 }), amount: fc.integer({ min: 0, max: 40 }) }), { keys: 3 }),
      model: {
        decide: (_claim, ctx) => (ctx.agentStep === 'size' ? { size: 'small' } : { approve: true }),
        poison: (claim, step) => poisoned(claim as Claim) && step === ((claim as Claim).amount % 2 === 1 ? 'size' : 'verdict'),
      },
      resolutions: { decision: ({ step }) => (step === 'size' ? { size: 'large' } : { approve: false }) },
      crashes: false,
    });
    await fc.assert(property.property, { numRuns: 40, seed: 11 });
  });
});

describe('options a user may get wrong are refused, naming the fix', () => {
  test('a misspelt option, model option or invariant name', () => {
    expect(() => returnsProperty({ crash: false } as never)).toThrow(
      "topologyProperty: unknown option 'crash' (did you mean 'crashes'?); its options are topology,",
    );
    expect(() => returnsProperty({ model: { decide: () => ({}), latency: 5 } as never })).toThrow(
      "topologyProperty: unknown option 'model.latency' (did you mean 'model.latencyMs'?)",
    );
    expect(() => returnsProperty({ invariants: ['double-effects' as never] })).toThrow(
      "topologyProperty: invariants names 'double-effects', which is not one (did you mean 'double-effect'?); the built-in invariants are order-violation,",
    );
    expect(() => returnsProperty({ invariants: ['row-shared-by-keys'] })).not.toThrow();
    expect(() => fakeModel({ decide: () => ({}), latency: 5 } as never)).toThrow("fakeModel: unknown option 'latency' (did you mean 'latencyMs'?)");
  });

  test('a builder that asks decide() for a name that is no agent step while a step has none (a misspelling); one that asks lazily passes', async () => {
    const misnamed = returnsProperty({ topology: (decide) => returnsTopology(decide<PricedReturn, unknown>('inspekt')), crashes: false });
    const message = await failureOf(misnamed.property as fc.IAsyncProperty<[unknown]>, { numRuns: 5, seed: 1 });
    expect(message).toContain(
      "topologyProperty: the builder asked for decide('inspekt'), and the topology has no agent step 'inspekt' (did you mean 'inspect'?); its agent steps: 'inspect'",
    );
    // Asked for lazily, inside the step, decide('inspect') is paired all the same.
    const lazy = returnsProperty({
      topology: (decide) => returnsTopology((event, ctx) => decide<PricedReturn, unknown>('inspect')(event, ctx)),
      crashes: false,
    });
    await fc.assert(lazy.property, { numRuns: 5, seed: 1 });
  });
});
