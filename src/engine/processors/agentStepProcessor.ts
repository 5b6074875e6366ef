import type { AgentStepNode } from '../../graph/nodes.js';
import { runAgentStep, Stepper } from '../agentStepRunner.js';
import { isThenable, type Tried } from '../attemptLoop.js';
import type { EventInFlight, Processed, ProcessorFactory } from './processor.js';

/**
 * Asks the step for a decision (through its rate gate, with its attempts) and passes on
 * `{ event, decision }`; the decision is also kept by the step's name for the steps and the effect
 * after it. A decision the event already has (a person's, or one made before it was parked) is
 * used as it is, without a call.
 */
export const agentStepProcessor: ProcessorFactory<AgentStepNode> = (node, ctx, parking) => {
  // The topology is validated: every agent step has its park right after it.
  const { park } = parking!;
  const stepper = new Stepper(ctx, node, park, ctx.gates.get(node.name)!);
  const decided = (unit: EventInFlight, result: Tried<unknown>): Processed => {
    if (!result.ok) return { kind: 'parked', attempts: result.attempts, park, step: node.name };
    // Most decisions come at the first attempt: then there is no attempts record to delete.
    if (result.attemptsStored) unit.ops.push(ctx.attempts.del(node, unit.event));
    unit.decisions = { ...unit.decisions, [node.name]: result.value };
    unit.value = { event: unit.value, decision: result.value };
    return undefined;
  };
  return {
    process(unit) {
      if (Object.hasOwn(unit.decisions, node.name)) {
        unit.value = { event: unit.value, decision: unit.decisions[node.name] };
        return undefined;
      }
      const stepped = runAgentStep(stepper, unit);
      return isThenable(stepped) ? stepped.then((result) => decided(unit, result)) : decided(unit, stepped);
    },
  };
};
