import type { AgentStepNode, DecidedBy } from '../../graph/nodes.js';
import { runAgentStep, Stepper } from '../agentStepRunner.js';
import { isThenable, withAttempts, type Attempter, type Tried, type Try } from '../attemptLoop.js';
import type { AttemptsRecord } from '../attemptsRecords.js';
import type { EventInFlight, GuardedStep, Processed, ProcessorFactory, Stopped } from './processor.js';

/**
 * Asks the step for a decision (through its rate gate, with its attempts) and passes on
 * `{ event, decision }`; the decision is also kept by the step's name for the steps and the effect
 * after it, with who made it. A decision the event already has (a route's, a person's, or one made
 * before it was parked) is used as it is, without a call. A step with a guard (a shadow, a
 * fallback) lets the guard drive its attempts.
 */
export const agentStepProcessor: ProcessorFactory<AgentStepNode> = (node, ctx, parking, guards) => {
  // The topology is validated: every agent step has its park right after it.
  const { park } = parking!;
  const stepper = new Stepper(ctx, node, park, ctx.gates.get(node.name)!);
  const exhausted = (attempts: AttemptsRecord): Stopped => ({ kind: 'parked', attempts, park, step: node.name });
  const pass = (unit: EventInFlight, decision: unknown, by: DecidedBy): undefined => {
    unit.decisions = { ...unit.decisions, [node.name]: decision };
    unit.decidedBy = { ...unit.decidedBy, [node.name]: by };
    unit.value = { event: unit.value, decision };
    return undefined;
  };
  const decided = (unit: EventInFlight, result: Tried<unknown>): Processed => {
    if (!result.ok) return exhausted(result.attempts);
    // Most decisions come at the first attempt: then there is no attempts record to delete.
    if (result.attemptsStored) unit.ops.push(ctx.attempts.del(node, unit.event));
    return pass(unit, result.value, 'agent');
  };
  const guarded: GuardedStep = {
    node,
    attempts: (unit, watch) => (watch ? withAttempts(ctx, watching(stepper, watch), unit) : runAgentStep(stepper, unit)),
    stored: (unit) => ctx.attempts.of(node, unit.event),
    take(unit, decision, by) {
      if (ctx.attempts.of(node, unit.event).count > 0) unit.ops.push(ctx.attempts.del(node, unit.event));
      return pass(unit, decision, by);
    },
    exhausted,
  };
  return {
    process(unit) {
      if (Object.hasOwn(unit.decisions, node.name)) {
        unit.value = { event: unit.value, decision: unit.decisions[node.name] };
        return undefined;
      }
      const guard = guards.of(node.name);
      if (guard) return guard.decide(guarded, unit);
      const stepped = runAgentStep(stepper, unit);
      return isThenable(stepped) ? stepped.then((result) => decided(unit, result)) : decided(unit, stepped);
    },
  };
};

/** The step's attempter, telling `watch` how each attempt ended (a guard's circuit counts them). */
function watching(stepper: Stepper, watch: (tried: Try<unknown>) => void): Attempter<unknown> {
  return {
    owner: stepper.owner,
    park: stepper.park,
    attempt(unit, attempt, previous, refused) {
      const tried = stepper.attempt(unit, attempt, previous, refused);
      if (!isThenable(tried)) {
        watch(tried);
        return tried;
      }
      return tried.then((settled) => {
        watch(settled);
        return settled;
      });
    },
  };
}
