import type { FallbackNode } from '../../graph/nodes.js';
import { isThenable } from '../attemptLoop.js';
import { CircuitBreaker, CircuitOpenError, type CircuitPermit } from '../circuitBreaker.js';
import { eitherSignal } from '../eitherSignal.js';
import type { EngineContext } from '../engineContext.js';
import type { ParkedKeys } from '../parkedKeys.js';
import type { EventInFlight, GuardedStep, Processed, Processor, ProcessorFactory } from './processor.js';
import { callRule, type Ruled } from './ruleCall.js';

const NOTHING: Processor = { process: () => undefined };

/**
 * Guards the agent step before it with a circuit (one per step and engine, shared by its
 * partitions): while the circuit is closed the step decides as it would alone, and its attempts
 * tell the circuit how the step fares (a call that threw, timed out or was refused fails; one that
 * answered, even with a decision its schema refuses, does not); while it is open, or half-open with its probe out, the
 * handler decides, marked `fallback`, and no call is made. The circuit opening aborts the calls
 * and waits of the events at the step, which the handler then decides. An event whose attempts
 * ran out while the circuit was closed is parked (a poison event is not an outage), unless another
 * event's calls failed too since the step last answered: then the handler decides it (see
 * CircuitBreaker.judge). At its own
 * place in the chain the event has its decision already.
 */
export const fallbackProcessor: ProcessorFactory<FallbackNode> = (node, ctx, parking, guards) => {
  // The DSL puts a fallback right after its step's park.
  const step = ctx.topology.agentSteps.find((s) => s.name === node.step)!;
  const breaker = breakerOf(ctx, node);
  const byHandler = (guarded: GuardedStep, unit: EventInFlight): Processed | Promise<Processed> => {
    const taken = (ruled: Ruled): Processed =>
      ruled.kind === 'decided' ? guarded.take(unit, ruled.value, 'fallback') : ruled.kind === 'undecided' ? undefined : ruled;
    const ruled = callRule(ctx, node, step, parking, unit, unit.value);
    return isThenable(ruled) ? ruled.then(taken) : taken(ruled);
  };
  const byStep = async (guarded: GuardedStep, unit: EventInFlight, permit: CircuitPermit): Promise<Processed> => {
    const before = guarded.stored(unit);
    if (before.count > 0) breaker.failedBefore(unit.event, before.errors);
    const either = eitherSignal(unit.signal, breaker.opened);
    let tried;
    breaker.entered(unit.event);
    try {
      tried = await guarded.attempts({ ...unit, signal: either.signal }, (attempt) => breaker.saw(attempt, unit.event));
    } catch (error) {
      if (unit.signal.aborted || !(error instanceof CircuitOpenError)) throw error;
      return byHandler(guarded, unit);
    } finally {
      either.end();
      breaker.left(unit.event);
      // A probe that made no attempt (its event given up, or its attempts already spent) leaves the probe to the next event.
      breaker.released(permit);
    }
    if (tried.ok) return guarded.take(unit, tried.value, 'agent');
    return breaker.judge(unit.event) === 'outage' ? byHandler(guarded, unit) : guarded.exhausted(tried.attempts);
  };
  guards.register(node.step, {
    decide(guarded, unit) {
      const permit = breaker.permit();
      return permit === 'fallback' ? byHandler(guarded, unit) : byStep(guarded, unit, permit);
    },
  });
  return NOTHING;
};

/**
 * Tells each fallback's circuit of the poison events of its step parked on a partition just
 * restored: their failures count in the run as the failures of events still unfinished do (see
 * CircuitBreaker.failedBefore), so that after a restart in an outage whose events come one at a
 * time, the first to run out is not parked too. Only keys parked within `afterMs` are read.
 */
export function circuitsSeeParked(ctx: EngineContext, parked: ParkedKeys): void {
  const fallbacks = ctx.topology.processors.filter((n): n is FallbackNode => n.kind === 'fallback');
  if (fallbacks.length === 0) return;
  const now = ctx.clock.now();
  for (const node of fallbacks) {
    const breaker = breakerOf(ctx, node);
    for (const key of parked.all()) {
      if (key.status !== 'parked' || key.parkedAtMs < now - node.afterMs) continue;
      const head = parked.head(key.lane);
      if (head.reason === 'POISON' && head.step === node.step) breaker.failedBefore(head.event, head.errors);
    }
  }
}

/** Cancels the timers of the engine's circuits: it stops (see CircuitBreaker.dispose). */
export function disposeCircuits(ctx: EngineContext): void {
  for (const breaker of circuits.get(ctx)?.values() ?? []) breaker.dispose();
}

/** The circuits of each engine, by step: the partitions of one engine share their step's circuit; a new engine (a restart) starts closed. */
const circuits = new WeakMap<EngineContext, Map<string, CircuitBreaker>>();

function breakerOf(ctx: EngineContext, node: FallbackNode): CircuitBreaker {
  let mine = circuits.get(ctx);
  if (!mine) circuits.set(ctx, (mine = new Map()));
  let breaker = mine.get(node.step);
  if (!breaker) {
    const changed = (state: CircuitBreaker['state'], atMs: number, cause?: string) =>
      ctx.observer.circuit?.({ step: node.step, fallback: node.name, state, atMs, ...(cause !== undefined ? { cause } : {}) });
    breaker = new CircuitBreaker(ctx.clock, node.step, node.afterMs, node.halfOpenAfterMs, changed);
    mine.set(node.step, breaker);
  }
  return breaker;
}
