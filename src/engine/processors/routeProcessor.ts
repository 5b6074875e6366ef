import type { AgentStepNode, RouteNode } from '../../graph/nodes.js';
import { isThenable } from '../attemptLoop.js';
import type { EventInFlight, Processed, ProcessorFactory } from './processor.js';
import { callRule, type Ruled } from './ruleCall.js';

/**
 * Asks the rule for a decision on the event before the agent step that follows: a decision is
 * kept as the step's, marked `rule`, and the step makes no call; `undefined` leaves the event to
 * the step (or to the next route in a row). An event that has the step's decision already (an
 * earlier route's, or a replay's) is not asked again.
 */
export const routeProcessor: ProcessorFactory<RouteNode> = (node, ctx, parking) => {
  // The topology is validated: an agent step follows the route (after the other routes in a row).
  const nodes = ctx.topology.processors;
  const step = nodes.slice(nodes.indexOf(node) + 1).find((n): n is AgentStepNode => n.kind === 'agentStep')!;
  const ruled = (unit: EventInFlight, result: Ruled): Processed => {
    if (result.kind === 'undecided') return undefined;
    if (result.kind !== 'decided') return result;
    unit.decisions = { ...unit.decisions, [step.name]: result.value };
    unit.decidedBy = { ...unit.decidedBy, [step.name]: 'rule' };
    return undefined;
  };
  return {
    process(unit) {
      if (Object.hasOwn(unit.decisions, step.name)) return undefined;
      const result = callRule(ctx, node, step, parking, unit, unit.value);
      return isThenable(result) ? result.then((r) => ruled(unit, r)) : ruled(unit, result);
    },
  };
};
