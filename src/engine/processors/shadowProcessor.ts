import type { Decided, ShadowNode } from '../../graph/nodes.js';
import { isThenable, type Tried } from '../attemptLoop.js';
import type { AttemptsRecord } from '../attemptsRecords.js';
import { eitherSignal } from '../eitherSignal.js';
import { shadowRecord } from '../shadowRecords.js';
import type { EventInFlight, GuardedStep, Processed, ProcessorFactory } from './processor.js';
import { callRule, type Ruled } from './ruleCall.js';
import { userFunctionFailed } from './userFunctionFailed.js';

/** Why a shadow's agent part ended without an answer: its `maxWaitMs` ran out. */
class ShadowWaitOver extends Error {
  constructor(step: string, maxWaitMs: number) {
    super(`agentStep '${step}': no decision within the shadow's maxWaitMs (${maxWaitMs} ms): the handler decided without it`);
    this.name = 'ShadowWaitOver';
  }
}

/**
 * Runs the agent step before it in shadow. As the step's guard it turns attempts that ran out into
 * no decision (the event is not parked); at its own place it asks the handler for the decision to
 * apply, which replaces the agent's (marked `rule`), and adds the shadow record (both decisions,
 * whether they agree) to the event's outputs, so it goes out with the event's end. A disagreement
 * is told to the observer, with the key. Events whose decision the agent did not make here (a
 * route's, a person's, a replay's) go through as they are.
 */
export const shadowProcessor: ProcessorFactory<ShadowNode> = (node, ctx, parking, guards) => {
  // The DSL puts a shadow right after its step's park.
  const step = ctx.topology.agentSteps.find((s) => s.name === node.step)!;
  /** Events whose agent attempts ran out, with those attempts. */
  const failed = new WeakMap<EventInFlight, AttemptsRecord>();
  guards.register(node.step, {
    decide(guarded, unit) {
      const decided = (tried: Tried<unknown>): Processed => {
        if (tried.ok) return guarded.take(unit, tried.value, 'agent');
        failed.set(unit, tried.attempts);
        return guarded.take(unit, undefined, 'agent');
      };
      if (node.maxWaitMs === undefined) {
        const tried = guarded.attempts(unit);
        return isThenable(tried) ? tried.then(decided) : decided(tried);
      }
      return boundedAttempts(guarded, unit, node.maxWaitMs, decided);
    },
  });
  /**
   * The agent's attempts, given up after `maxWaitMs` on the engine's clock: the handler then
   * decides, and the shadow record names the bound. The attempts see a signal aborted at the bound
   * as well as by the engine, so a wait at the rate gate, a Retry-After or a call ends there.
   */
  const boundedAttempts = (
    guarded: GuardedStep,
    unit: EventInFlight,
    maxWaitMs: number,
    decided: (tried: Tried<unknown>) => Processed,
  ): Processed | Promise<Processed> => {
    const bound = new AbortController();
    // Made only when the bound is reached: most events are answered in time.
    const timer = ctx.clock.setTimer(maxWaitMs, () => bound.abort(new ShadowWaitOver(node.step, maxWaitMs)));
    const either = eitherSignal(unit.signal, bound.signal);
    const ended = () => {
      timer.cancel();
      either.end();
    };
    const gaveUp = (error: unknown): Processed => {
      if (unit.signal.aborted) throw unit.signal.reason;
      if (!(error instanceof ShadowWaitOver)) throw error;
      const stored = ctx.attempts.of(step, unit.event);
      failed.set(unit, { count: stored.count, errors: [...stored.errors, { attempt: stored.count + 1, atMs: ctx.clock.now(), error: error.message }] });
      return guarded.take(unit, undefined, 'agent');
    };
    // The attempts only read the unit (its event, value and decisions): they get it with the bounded signal.
    const bounded: EventInFlight = { ...unit, signal: either.signal };
    let tried: Tried<unknown> | Promise<Tried<unknown>>;
    try {
      tried = guarded.attempts(bounded);
    } catch (error) {
      ended();
      return gaveUp(error);
    }
    if (!isThenable(tried)) {
      ended();
      return decided(tried);
    }
    return tried.then(
      (result) => {
        ended();
        return decided(result);
      },
      (error: unknown) => {
        ended();
        return gaveUp(error);
      },
    );
  };
  const applied = (unit: EventInFlight, input: unknown, ruled: Ruled): Processed => {
    if (ruled.kind !== 'decided') return ruled.kind === 'undecided' ? undefined : ruled;
    const { event } = unit;
    const agent = unit.decisions[node.step];
    const attempts = failed.get(unit);
    let agrees: boolean | undefined;
    if (!attempts) {
      try {
        // Called alone, not as the node's method (see runAgentStep).
        const compare = node.agrees;
        agrees = compare(agent, ruled.value) === true;
      } catch (error) {
        return userFunctionFailed(ctx, node, parking, event, error, unit.signal);
      }
    }
    const atMs = ctx.clock.now();
    const agentError = attempts?.errors[attempts.errors.length - 1]?.error ?? (attempts ? 'its attempts ran out' : undefined);
    unit.outputs.push(
      shadowRecord(node.topic, event, {
        version: 1,
        step: node.step,
        shadow: node.name,
        effectId: event.effectId,
        ...(attempts ? { agentError: agentError! } : { agent, agrees: agrees! }),
        applied: ruled.value,
        atMs,
      }),
    );
    if (agrees === false)
      ctx.observer.shadowDisagreed?.({ step: node.step, shadow: node.name, key: event.key, effectId: event.effectId, atMs, agent, applied: ruled.value });
    unit.decisions = { ...unit.decisions, [node.step]: ruled.value };
    unit.decidedBy = { ...unit.decidedBy, [node.step]: 'rule' };
    unit.value = { event: input, decision: ruled.value };
    return undefined;
  };
  return {
    process(unit) {
      if (unit.decidedBy[node.step] !== 'agent') return undefined;
      const input = (unit.value as Decided<unknown, unknown>).event;
      const ruled = callRule(ctx, node, step, parking, unit, input);
      return isThenable(ruled) ? ruled.then((r) => applied(unit, input, r)) : applied(unit, input, ruled);
    },
  };
};
