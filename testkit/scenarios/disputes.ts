import { effect } from '../../src/dsl/effect.js';
import type { Decided } from '../../src/graph/nodes.js';
import { asObject, checkedSchema } from './checkedSchema.js';

/** A ChargeDisputed event: the worked example's and the disputes example's input. */
export interface Dispute {
  readonly disputeId: string;
  readonly account: string;
  readonly amount: number;
  readonly reason: string;
}

const actions = ['refund', 'escalate', 'reject'] as const;

/** What the agent step decides for a dispute. */
export interface Decision {
  action: (typeof actions)[number];
  rationale: string;
}

/** What is wrong with a value as a Decision; nothing when it is one. */
export function decisionProblems(value: unknown): string[] {
  const decision = asObject(value);
  if (!decision) return [`a decision is an object { action, rationale }, got ${JSON.stringify(value) ?? String(value)}`];
  const problems: string[] = [];
  if (!(actions as readonly unknown[]).includes(decision.action))
    problems.push(`action must be one of ${actions.join(', ')}, got ${JSON.stringify(decision.action) ?? 'nothing'}`);
  if (typeof decision.rationale !== 'string' || decision.rationale.length === 0) problems.push('rationale must be a non-empty string');
  return problems;
}

/** The Decision schema (a Standard Schema) that the agent step validates each decision against. */
export const Decision = checkedSchema<Decision>('orderly-disputes', decisionProblems);

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
