import type { OutRecord } from '../../ports/log.js';
import type { StoreOp } from '../../ports/store.js';
import type { EngineContext } from '../engineContext.js';
import type { Landed } from '../eventEnd.js';
import type { EngineEvent } from '../events.js';
import { Outcome, type OutcomeDetails } from '../outcomes.js';
import { effectRecordOp } from './effectLookup.js';

/**
 * Stage: the end of an event from the log. Its effect is recorded with its state in one batch
 * (with the deletes of its run journals, which end with it),
 * written and sent as the engine's end does (plain, staged or transactional). Returns `durable`
 * when the end has landed and is not durable yet; the outcome is reported once it is.
 */
export async function endEvent(
  ctx: EngineContext,
  event: EngineEvent,
  outcome: Outcome,
  ops: StoreOp[],
  outputs: OutRecord[],
  signal: AbortSignal,
  details?: OutcomeDetails,
  effectKey?: string,
): Promise<Landed | undefined> {
  // The last moment to give up: past it the effect is recorded, so the event runs to its end.
  signal.throwIfAborted();
  for (const op of ctx.runs.clear(event)) ops.push(op);
  if (outcome === Outcome.APPLIED) ops.push(effectRecordOp(ctx, event, outputs, effectKey));
  const landed = await ctx.end.end(event, ops, outputs);
  if (!landed) {
    ctx.report(outcome, event, details);
    return undefined;
  }
  return { durable: landed.durable.then(() => ctx.report(outcome, event, details)) };
}

/** The end of a replayed event, with its removal from its parked key (see EventEnd.endReplay). */
export async function endReplayed(
  ctx: EngineContext,
  event: EngineEvent,
  outcome: Outcome,
  ops: StoreOp[],
  outputs: OutRecord[],
  advance: () => readonly StoreOp[],
  signal: AbortSignal,
  details?: OutcomeDetails,
  effectKey?: string,
): Promise<void> {
  signal.throwIfAborted();
  for (const op of ctx.runs.clear(event)) ops.push(op);
  if (outcome === Outcome.APPLIED) ops.push(effectRecordOp(ctx, event, outputs, effectKey));
  await ctx.end.endReplay(event, ops, outputs, advance);
  ctx.report(outcome, event, { ...details, replayed: true });
}
