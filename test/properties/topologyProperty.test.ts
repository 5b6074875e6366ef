// topologyProperty on topologies of different shapes, each at least 1,000 runs in every driver
// mode: the disputes example; a topology with a filter and mapValues before its step, a declared
// limit and an output topic. ORDERLY_TOPOLOGY_RUNS asks for more runs per mode (or, while
// developing, fewer).
import fc from 'fast-check';
import { describe, test } from 'vitest';
import { disputesWith } from '../../examples/disputes/topology.js';
import { driverModes } from '../../testkit/driver.js';
import { topologyProperty, type TopologyRun } from '../../testkit/index.js';
import type { Dispute } from '../../testkit/scenarios/disputes.js';
import { disputeEvents, disputeModelStandIn } from './topologies/disputes.js';
import { inspectStandIn, returnEvents, returnsTopology, type PricedReturn, type Return } from './topologies/returns.js';

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

describe.each(driverModes)('in mode %s', (mode) => {
  const inMode = { numRuns: runs, interruptAfterTimeLimit: 10 * 60_000, markInterruptAsFailure: true };
  test(`the disputes example keeps every invariant (${runs} runs)`, async () => {
    await fc.assert(fc.asyncProperty(disputes.arbitrary.filter((i) => i.mode === mode), disputes.predicate), inMode);
  }, timeout);

  test(`a filter and mapValues before the step, a declared limit and an output topic (${runs} runs)`, async () => {
    await fc.assert(fc.asyncProperty(returns.arbitrary.filter((i) => i.mode === mode), returns.predicate), inMode);
  }, timeout);
});

// The third topology, two agent steps in one chain, comes with the issue "One path" (a second
// agentStep in the DSL and engine): it goes here, through the same entry point, in every mode.
