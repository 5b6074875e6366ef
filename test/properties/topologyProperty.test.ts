// topologyProperty on topologies of different shapes, each at least 1,000 runs in every driver
// mode: the disputes example; a topology with a filter and mapValues before its step, a declared
// limit and an output topic; the same with a declared effect id and returns written twice; a chain
// of two agent steps, the second reading the first's decision.
// ORDERLY_TOPOLOGY_RUNS asks for more runs per mode (or, while
// developing, fewer).
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { disputesWith } from '../../examples/disputes/topology.js';
import { driverModes, type DriverMode } from '../../testkit/driver.js';
import { topologyProperty, TopologyPropertyError, type TopologyProperty, type TopologyRun, type TopologyRunInput } from '../../testkit/index.js';
import type { Dispute } from '../../testkit/scenarios/disputes.js';
import { disputeEvents, disputeModelStandIn } from './topologies/disputes.js';
import { claimEvents, claimsStandIn, claimsTopology, type Claim, type Classified, type PayoutRow } from './topologies/claims.js';
import { inspectStandIn, returnEvents, returnEventsWithCopies, returnsTopology, type PricedReturn, type Return } from './topologies/returns.js';

const runs = Number(process.env.ORDERLY_TOPOLOGY_RUNS ?? 1_000);
const timeout = 15 * 60_000;

/** A user-level invariant: the effect's state row of a dispute is written once, whatever crashed. */
function refundedOnce(run: TopologyRun<Dispute>): string[] {
  const writes = new Map<string, number>();
  for (const e of run.driver.effects()) for (const row of e.state) writes.set(row.row, (writes.get(row.row) ?? 0) + 1);
  return [...writes].filter(([, n]) => n > 1).map(([row, n]) => `dispute ${row} was decided ${n} times`);
}

const disputes = topologyProperty<Dispute>({
  topology: (decide) => disputesWith(decide('decide')),
  events: disputeEvents,
  model: disputeModelStandIn,
  resolutions: { decision: () => ({ action: 'escalate', rationale: 'a person looked at it' }) },
  userInvariants: { 'a dispute is decided once': refundedOnce },
});

const returns = topologyProperty<Return>({
  topology: (decide) => returnsTopology(decide<PricedReturn, unknown>('inspect')),
  events: returnEvents,
  model: { decide: (r: PricedReturn) => inspectStandIn(r), latencyMs: { min: 0, max: 4_000 }, failureShare: 0.1 },
  resolutions: { decision: () => ({ refund: false, reason: 'a person refused it' }), retry: true },
});

/** A user-level invariant: each returnId is applied at most once, however often the producer wrote it. */
function returnAppliedOnce(run: TopologyRun<Return>): string[] {
  const applied = new Map<string, number>();
  for (const e of run.driver.effects()) applied.set(e.effectId, (applied.get(e.effectId) ?? 0) + 1);
  return [...applied].filter(([, n]) => n > 1).map(([id, n]) => `return ${id} was applied ${n} times`);
}

const returnsDeclared = topologyProperty<Return>({
  topology: (decide) => returnsTopology(decide<PricedReturn, unknown>('inspect'), { declaredIds: true }),
  events: returnEventsWithCopies,
  model: { decide: (r: PricedReturn) => inspectStandIn(r), latencyMs: { min: 0, max: 4_000 }, failureShare: 0.1 },
  resolutions: { decision: () => ({ refund: false, reason: 'a person refused it' }), retry: true },
  userInvariants: { 'a return is applied once': returnAppliedOnce },
});

/** A user-level invariant: every payout names the category its claim was classified in (assess read classify's decision). */
function assessedAsClassified(run: TopologyRun<Claim>): string[] {
  return run.driver
    .effects()
    .flatMap((e) => e.state)
    .filter((row) => row.value !== undefined)
    .flatMap((row) => {
      const payout = row.value as PayoutRow;
      return payout.category === payout.classifiedAs
        ? []
        : [`claim ${row.row} was assessed as ${payout.category} but classified as ${String(payout.classifiedAs)}`];
    });
}

const claims = topologyProperty<Claim>({
  topology: (decide) => claimsTopology(decide<Claim, unknown>('classify'), decide<Classified, unknown>('assess')),
  events: claimEvents,
  model: { decide: (value, ctx) => claimsStandIn(value as Claim | Classified, ctx), latencyMs: { min: 0, max: 3_000 } },
  userInvariants: { 'a payout names the category its claim was classified in': assessedAsClassified },
});

/** How often the runs met what the invariants are about: a property that never crashed or parked checks little. */
interface Tally {
  runs: number;
  restarted: number;
  parked: number;
  resolved: number;
  refused: number;
  filtered: number;
  /** Runs in which a copy with the same declared effect id ended as a DUPLICATE at its own offset. */
  duplicated: number;
}

/** The property's predicate, counting what each run met. */
function counted<T>(property: TopologyProperty<T>, tally: Tally) {
  return async (input: TopologyRunInput<T>) => {
    const run = await property.run(input);
    try {
      const { violations, notes } = await property.check(run);
      if (violations.length > 0) throw new TopologyPropertyError(input, violations, notes, run.placed);
      const history = run.driver.history();
      tally.runs += 1;
      if (run.driver.restartState().generation > 1) tally.restarted += 1;
      if (history.some((h) => h.outcome === 'PARKED')) tally.parked += 1;
      if (run.driver.resolutions().length > 0) tally.resolved += 1;
      if ([...run.models.values()].some((m) => m.stats().refused > 0)) tally.refused += 1;
      if (history.some((h) => h.outcome === 'FILTERED')) tally.filtered += 1;
      if (history.some((h) => h.outcome === 'DUPLICATE' && h.effectId !== `${h.topic}/${h.partition}/${h.offset}`)) tally.duplicated += 1;
    } finally {
      await run.driver.close();
    }
  };
}

const fresh = (): Tally => ({ runs: 0, restarted: 0, parked: 0, resolved: 0, refused: 0, filtered: 0, duplicated: 0 });

/** Runs a property in one mode, then checks that its runs met each of `mustMeet` at least once. */
async function holdsInMode<T>(
  name: string,
  property: TopologyProperty<T>,
  mode: DriverMode,
  mustMeet: ReadonlyArray<Exclude<keyof Tally, 'runs'>>,
): Promise<void> {
  const tally = fresh();
  const inMode = property.arbitrary.filter((i) => i.mode === mode);
  await fc.assert(fc.asyncProperty(inMode, counted(property, tally)), { numRuns: runs, interruptAfterTimeLimit: 10 * 60_000, markInterruptAsFailure: true });
  console.log(`${name}, ${mode}: ${JSON.stringify(tally)}`);
  expect(tally.runs).toBe(runs);
  for (const met of mustMeet) expect(tally[met], met).toBeGreaterThan(0);
}

describe.each(driverModes)('in mode %s', (mode) => {
  test(
    `the disputes example keeps every invariant (${runs} runs)`,
    () => holdsInMode('disputes', disputes, mode, ['restarted', 'parked', 'resolved', 'refused']),
    timeout,
  );

  test(
    `a filter and mapValues before the step, a declared limit and an output topic (${runs} runs)`,
    () => holdsInMode('returns', returns, mode, ['restarted', 'parked', 'resolved', 'refused', 'filtered']),
    timeout,
  );

  test(
    `a declared effect id, with returns the producer wrote twice (${runs} runs)`,
    () => holdsInMode('returns with declared ids', returnsDeclared, mode, ['restarted', 'parked', 'resolved', 'duplicated']),
    timeout,
  );

  test(
    `two agent steps, the second reading the first's decision, each with its own limit and park (${runs} runs)`,
    () => holdsInMode('claims', claims, mode, ['restarted', 'parked', 'resolved']),
    timeout,
  );
});
