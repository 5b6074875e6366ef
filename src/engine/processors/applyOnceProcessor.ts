import type { ApplyOnceNode } from '../../graph/nodes.js';
import type { EffectContext } from '../../graph/effect.js';
import { abortable } from '../../ports/clock.js';
import { isThenable, withAttempts, type Attempter, type Tried, type Try } from '../attemptLoop.js';
import { timedCall } from '../callTimeout.js';
import type { EngineContext } from '../engineContext.js';
import { metaOf } from '../events.js';
import { failedAttempts, operatorError } from '../operatorFailure.js';
import { StagedTable } from '../stagedTable.js';
import type { EventInFlight, Processed, ProcessorFactory } from './processor.js';

/** A successful attempt of the effect: its result and the table it wrote. */
interface Effected {
  readonly result: unknown;
  readonly table: StagedTable;
}

/**
 * Applies the effect; a throw (an outside system down, say) is retried after the park's delay,
 * with the decisions kept, up to the park's attempts, and then parks the event: the same loop as
 * the agent step's, its failed attempts kept in the effect's store. Its state table writes count
 * only from the attempt that succeeds, and go with the effect record in the event's end. An
 * effect that returns at once on its first attempt is applied without a promise.
 */
export const applyOnceProcessor: ProcessorFactory<ApplyOnceNode> = (node, ctx, parking) => {
  const effected = (unit: EventInFlight, tried: Tried<Effected>): Processed => {
    if (!tried.ok) {
      const attempts = failedAttempts(ctx, node, unit.event, tried.attempts.errors, unit.signal);
      return { kind: 'parked', attempts, park: parking!.park, step: parking!.step };
    }
    if (tried.attemptsStored) unit.ops.push(ctx.attempts.del(node, unit.event));
    tried.value.table.stageInto(unit.ops);
    if (tried.value.result !== undefined) unit.value = tried.value.result;
    return undefined;
  };
  const attempter: Attempter<Effected> = { owner: node, park: parking?.park, attempt: (unit) => attemptEffect(ctx, node, unit) };
  return {
    process(unit) {
      const tried = withAttempts(ctx, attempter, unit);
      return isThenable(tried) ? tried.then((t) => effected(unit, t)) : effected(unit, tried);
    },
  };
};

/** One attempt of the effect, with a state table of its own. */
function attemptEffect(ctx: EngineContext, node: ApplyOnceNode, unit: EventInFlight): Try<Effected> | Promise<Try<Effected>> {
  const table = new StagedTable(ctx.store, node.name, unit.event);
  let applied: unknown;
  try {
    applied = callEffect(ctx, node, unit, table);
  } catch (error) {
    return effectFailed(node, error, unit.signal);
  }
  if (!isThenable(applied)) return sealed(node, unit, applied, table);
  return Promise.resolve(applied).then(
    (result): Try<Effected> => sealed(node, unit, result, table),
    (error: unknown) => effectFailed(node, error, unit.signal),
  );
}

/** The effect returned: its attempt is done once its table's rows are JSON (see StagedTable.seal), else it failed. */
function sealed(node: ApplyOnceNode, unit: EventInFlight, result: unknown, table: StagedTable): Try<Effected> {
  try {
    table.seal();
  } catch (error) {
    return effectFailed(node, error, unit.signal);
  }
  return { kind: 'done', value: { result, table } };
}

/** A failed attempt of the effect; given up (the engine's signal), it is no attempt: the event stays unfinished. */
function effectFailed(node: ApplyOnceNode, error: unknown, signal: AbortSignal): Try<Effected> {
  if (signal.aborted) throw signal.reason;
  return { kind: 'failed', error: operatorError(node, error) };
}

/** What the effect is told about its event; `signal` is the call's (the event's, or its timeout's). */
function effectContext(ctx: EngineContext, unit: EventInFlight, table: StagedTable, signal: AbortSignal): EffectContext {
  const { event, decisions, decidedBy } = unit;
  return { key: event.key, effectId: event.effectId, record: metaOf(event), state: table, decisions, decidedBy, signal, clock: ctx.clock };
}

/** Calls the effect once; with a timeout, a call that passes it rejects (its late result is dropped) and counts as a failed attempt. */
function callEffect(ctx: EngineContext, node: ApplyOnceNode, unit: EventInFlight, table: StagedTable): unknown {
  // Called alone, not as the effect's method (see runAgentStep).
  const { apply, timeoutMs } = node.effect;
  if (timeoutMs === undefined) return apply(unit.value, effectContext(ctx, unit, table, unit.signal));
  const call = timedCall(ctx.clock, unit.signal, timeoutMs, `applyOnce '${node.name}'`);
  let applied: unknown;
  try {
    applied = apply(unit.value, effectContext(ctx, unit, table, call.signal));
  } catch (error) {
    call.end();
    throw error;
  }
  if (!isThenable(applied)) {
    call.end();
    return applied;
  }
  return abortable(Promise.resolve(applied), call.signal).finally(() => call.end());
}
