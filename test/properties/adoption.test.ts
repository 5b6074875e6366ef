// topologyProperty over the adoption operators: a route before the step, then either a fallback
// (its circuit opening and closing on refusals and failures) or a shadow. Besides the built-in
// invariants (order, effects once, commits, nothing lost, parked keys held, Retry-After), each
// applied decision must carry the mark of who made it, and under a shadow no agent decision is
// ever applied. Runs in every driver mode, with crashes. ORDERLY_ADOPTION_RUNS asks for more runs.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { effect, stream, type DecideFn, type Decided, type DecidedBy } from '../../src/index.js';
import { keyedEvents, topologyProperty, TopologyPropertyError, type TopologyProperty, type TopologyRun } from '../../testkit/index.js';

const runs = Number(process.env.ORDERLY_ADOPTION_RUNS ?? 200);

interface Refund {
  readonly refundId: string;
  readonly cents: number;
  readonly note: string;
}

/** Each decision says who was meant to make it, so an invariant can hold it against the engine's mark. */
const Verdict = z.object({ refund: z.boolean(), by: z.enum(['agent', 'rule', 'fallback', 'handler', 'person']) });
type Verdict = z.infer<typeof Verdict>;

const rule = (r: Refund): Verdict | undefined => (r.cents <= 1_000 ? { refund: true, by: 'rule' } : undefined);
const agent = (r: Refund): Verdict => ({ refund: r.cents < 5_000, by: 'agent' });
const fallbackHandler = (): Verdict => ({ refund: false, by: 'fallback' });
const legacyHandler = (r: Refund): Verdict => ({ refund: r.cents < 3_000, by: 'handler' });

const record = effect('refund-verdicts', ({ event, decision }: Decided<Refund, Verdict>, { state, decidedBy }) => {
  state.put(event.refundId, { by: decision.by, mark: decidedBy.decide });
  return { refundId: event.refundId, refund: decision.refund };
});

function routed(decide: DecideFn<Refund, unknown>) {
  return stream<Refund>('refunds')
    .keyedSerial({ maxInFlight: 3 })
    .route('small', rule)
    .agentStep('decide', decide, { schema: Verdict })
    .park({ attempts: 3, retryDelayMs: 500 });
}

/** The mark each decision's `by` must carry: a shadow's handler is deterministic code, a rule. */
const markOf: Readonly<Record<Verdict['by'], DecidedBy>> = { agent: 'agent', rule: 'rule', fallback: 'fallback', handler: 'rule', person: 'person' };

function rows(run: TopologyRun<Refund>): Array<{ row: string; by: Verdict['by']; mark: DecidedBy | undefined }> {
  return run.driver
    .effects()
    .flatMap((e) => e.state)
    .filter((row) => row.value !== undefined)
    .map((row) => ({ row: row.row, ...(row.value as { by: Verdict['by']; mark: DecidedBy | undefined }) }));
}

function markedAsMade(run: TopologyRun<Refund>): string[] {
  return rows(run)
    .filter((r) => r.mark !== markOf[r.by])
    .map((r) => `refund ${r.row} was decided by ${r.by} but marked ${String(r.mark)}`);
}

function noAgentDecisionApplied(run: TopologyRun<Refund>): string[] {
  return rows(run)
    .filter((r) => r.by === 'agent')
    .map((r) => `refund ${r.row}: the agent's decision was applied under a shadow`);
}

const events = keyedEvents(fc.record({ refundId: fc.uuid(), cents: fc.integer({ min: 0, max: 8_000 }), note: fc.constantFrom('', '', '', 'garbled') }), {
  keys: 4,
});
/** A model that refuses past 2 calls per 5 s and fails a third of its calls: enough to open a 3 s circuit. */
const model = {
  decide: (value: unknown) => agent(value as Refund),
  poison: (value: unknown) => (value as Refund).note === 'garbled',
  latencyMs: { min: 0, max: 3_000 },
  limit: { calls: 2, windowMs: 5_000 },
  failureShare: 0.3,
};
const resolutions = { decision: () => ({ refund: false, by: 'person' }), retry: true };

const withFallback = topologyProperty<Refund>({
  topology: (decide) =>
    routed(decide('decide')).fallback('no-refund', fallbackHandler, { afterMs: 3_000, halfOpenAfterMs: 2_000 }).applyOnce(record).to('verdicts').build(),
  events,
  model,
  resolutions,
  userInvariants: { 'each decision is marked with who made it': markedAsMade },
});

const withShadow = topologyProperty<Refund>({
  topology: (decide) => routed(decide('decide')).shadow('legacy', legacyHandler).applyOnce(record).to('verdicts').build(),
  events,
  model,
  resolutions,
  userInvariants: { 'each decision is marked with who made it': markedAsMade, 'no agent decision is applied': noAgentDecisionApplied },
});

/** Runs the property and counts what its runs met: a property that never opened a circuit checks little. */
async function holds(
  property: TopologyProperty<Refund>,
  meets: Readonly<Record<string, (run: TopologyRun<Refund>) => boolean>>,
): Promise<Record<string, number>> {
  const tally: Record<string, number> = Object.fromEntries(Object.keys(meets).map((k) => [k, 0]));
  await fc.assert(
    fc.asyncProperty(property.arbitrary, async (input) => {
      const run = await property.run(input);
      try {
        const { violations, notes } = await property.check(run);
        if (violations.length > 0) throw new TopologyPropertyError(input, violations, notes, run.placed);
        for (const [name, met] of Object.entries(meets)) if (met(run)) tally[name]! += 1;
      } finally {
        await run.driver.close();
      }
    }),
    { numRuns: runs },
  );
  return tally;
}

const applied = (run: TopologyRun<Refund>, by: DecidedBy) => run.driver.history().some((h) => h.outcome === 'APPLIED' && h.decidedBy?.decide === by);
const restarted = (run: TopologyRun<Refund>) => run.driver.restartState().generation > 1;

describe('adoption operators under topologyProperty', () => {
  test(`route + fallback keeps every invariant, and marks each decision (${runs} runs)`, async () => {
    const tally = await holds(withFallback, {
      restarted,
      rule: (run) => applied(run, 'rule'),
      agent: (run) => applied(run, 'agent'),
      fallback: (run) => applied(run, 'fallback'),
      person: (run) => applied(run, 'person'),
    });
    console.log(`route + fallback: ${JSON.stringify(tally)}`);
    for (const [met, count] of Object.entries(tally)) expect(count, met).toBeGreaterThan(0);
  }, 600_000);

  test(`route + shadow keeps every invariant and applies no agent decision (${runs} runs)`, async () => {
    const tally = await holds(withShadow, {
      restarted,
      rule: (run) => applied(run, 'rule'),
      shadowed: (run) => (run.outputs.get('refunds.shadow')?.length ?? 0) > 0,
    });
    console.log(`route + shadow: ${JSON.stringify(tally)}`);
    for (const [met, count] of Object.entries(tally)) expect(count, met).toBeGreaterThan(0);
  }, 600_000);
});
