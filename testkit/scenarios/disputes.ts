import { z } from 'zod';
import { effect } from '../../src/dsl/effect.js';
import type { Decided } from '../../src/graph/nodes.js';

/** A ChargeDisputed event: the worked example's and the disputes example's input. */
export interface Dispute {
  readonly disputeId: string;
  readonly account: string;
  readonly amount: number;
  readonly reason: string;
}

/** What the agent step decides for a dispute. */
export const Decision = z.object({
  action: z.enum(['refund', 'escalate', 'reject']),
  rationale: z.string().min(1),
});
export type Decision = z.infer<typeof Decision>;

/** A deterministic stand-in for the model: small amounts are refunded, fraud escalated, the rest rejected. */
export function standInDecision(dispute: Dispute): Decision {
  if (dispute.reason === 'fraud') return { action: 'escalate', rationale: 'possible fraud: a person decides' };
  if (dispute.amount <= 50) return { action: 'refund', rationale: `amount ${dispute.amount} is under the refund threshold` };
  return { action: 'reject', rationale: `reason '${dispute.reason}' is not covered` };
}

/** The decision applied once per dispute: kept in the effect's state table and sent downstream. */
export const applyDecision = effect('dispute-decisions', ({ event, decision }: Decided<Dispute, Decision>, { state }) => {
  state.put(event.disputeId, decision);
  return { disputeId: event.disputeId, account: event.account, ...decision };
});
