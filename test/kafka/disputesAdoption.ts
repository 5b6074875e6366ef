// The disputes example adopting its agent step: a route decides the small not-received disputes
// by rule, and the agent runs in shadow beside the old rules, whose decisions are applied. The
// effect writes who decided each dispute. Run from source (`node --import tsx`) by adoption.test.ts.
import { effect, stream, type Decided } from '../../src/index.js';
import { Decision, type Dispute } from '../../testkit/scenarios/disputes.js';
import { disputeSerde } from '../../examples/disputes/topology.js';
import { disputeModel } from '../../examples/disputes/model.js';

const prefix = process.env.ORDERLY_TOPIC_PREFIX ?? '';

/** Routine: an item not received, for 50 or less, is refunded without asking the model. */
export function routine(dispute: Dispute): Decision | undefined {
  return dispute.reason === 'not-received' && dispute.amount <= 50 ? { action: 'refund', rationale: 'routine: refunded by rule' } : undefined;
}

/** The old rules the agent is to replace: fraud escalated, 80 or less refunded, the rest rejected. */
export function legacy(dispute: Dispute): Decision {
  if (dispute.reason === 'fraud') return { action: 'escalate', rationale: 'the old rules escalate fraud' };
  return dispute.amount <= 80
    ? { action: 'refund', rationale: 'the old rules refund 80 or less' }
    : { action: 'reject', rationale: 'the old rules reject the rest' };
}

const record = effect('dispute-decisions', ({ event, decision }: Decided<Dispute, Decision>, { state, decidedBy }) => {
  state.put(event.disputeId, decision);
  return { disputeId: event.disputeId, account: event.account, ...decision, decidedBy: decidedBy.decide };
});

export default stream<Dispute>(`${prefix}disputes`, { value: disputeSerde })
  .keyedSerial({ maxInFlight: 4 })
  .route('routine', routine)
  .agentStep('decide', disputeModel(), { schema: Decision })
  .park({ attempts: 3, retryDelayMs: 100 })
  .shadow('legacy', legacy, { agrees: (agent, applied) => agent.action === applied.action })
  .applyOnce(record)
  .to(`${prefix}dispute-decisions`)
  .build();
