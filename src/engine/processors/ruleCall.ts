import type { AgentStepNode, FallbackNode, RouteNode, RuleContext, ShadowNode } from '../../graph/nodes.js';
import { validateDecision } from '../agentStepRunner.js';
import { isThenable } from '../attemptLoop.js';
import type { EngineContext } from '../engineContext.js';
import { metaOf } from '../events.js';
import type { EventInFlight, Parking, Stopped } from './processor.js';
import { userFunctionFailed } from './userFunctionFailed.js';

/** What a rule or a handler came to: a valid decision for the step, none (a rule left the event to the step), or where the event stopped. */
export type Ruled = { readonly kind: 'decided'; readonly value: unknown } | { readonly kind: 'undecided' } | Stopped;

const UNDECIDED: Ruled = Object.freeze({ kind: 'undecided' });

/** A rule's or a handler's node: deterministic code that decides for an agent step. */
type RuleNode = RouteNode | ShadowNode | FallbackNode;

/**
 * Calls a route's rule or a shadow's or fallback's handler on the step's input and validates its
 * decision against the step's schema. A throw, or a decision the schema refuses, parks the event at
 * once (the same input fails again), as a filter that throws does. Returns without a promise when
 * the function and the schema do.
 */
export function callRule(
  ctx: EngineContext,
  node: RuleNode,
  step: AgentStepNode,
  parking: Parking | undefined,
  unit: EventInFlight,
  input: unknown,
): Ruled | Promise<Ruled> {
  const failed = (error: unknown) => userFunctionFailed(ctx, node, parking, unit.event, error, unit.signal);
  let decision: unknown;
  try {
    decision = (node.kind === 'route' ? node.rule : node.handler)(input, ruleContext(unit));
  } catch (error) {
    return failed(error);
  }
  const checked = (value: unknown): Ruled | Promise<Ruled> => {
    if (value === undefined) {
      if (node.kind === 'route') return UNDECIDED;
      return failed(new Error(`it returned no decision for agentStep '${step.name}'; a ${node.kind}'s handler decides every event`));
    }
    const valid = validateDecision(step, value);
    const verdict = (v: Awaited<typeof valid>): Ruled =>
      v.kind === 'done' ? { kind: 'decided', value: v.value } : failed(new Error(`its decision for agentStep '${step.name}' was refused: ${v.error}`));
    return isThenable(valid) ? valid.then(verdict) : verdict(valid);
  };
  if (!isThenable(decision)) return checked(decision);
  return Promise.resolve(decision).then(checked, failed);
}

/** What a rule or handler is told about the event. */
function ruleContext(unit: EventInFlight): RuleContext {
  const { event } = unit;
  return { key: event.key, effectId: event.effectId, record: metaOf(event), decisions: unit.decisions };
}
