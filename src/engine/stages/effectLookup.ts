import type { OutRecord } from '../../ports/log.js';
import type { StoreOp } from '../../ports/store.js';
import { stateKeys } from '../../state/stateKeys.js';
import type { EngineContext } from '../engineContext.js';
import { where, type EngineEvent } from '../events.js';
import { storeOutput, type EffectRecord, type StoredOutput } from '../outputs.js';

/**
 * Stage 4, effect lookup, under the effect id (`EventUnits.lookup` tries the effect ring first):
 * the event's effect record, if its effect was applied (or a person discarded it). Such an event
 * ended for good: a redelivery runs no step again, and is not held behind a key parked after it
 * ended.
 */
export function recordedEffect(ctx: EngineContext, event: Omit<EngineEvent, 'value'>, key = effectKey(ctx, event)): EffectRecord | undefined {
  return key === undefined ? undefined : ctx.store.get<EffectRecord>(key);
}

/**
 * The state key of the event's effect record; undefined when the topology has no applyOnce. Built
 * once per event and handed on, to the lookup, the record and its prune: the same string, so that
 * the store's maps hash it once.
 */
export function effectKey(ctx: EngineContext, event: Omit<EngineEvent, 'value'>): string | undefined {
  const apply = ctx.topology.applyOnce;
  return apply && stateKeys.effect(apply.name, event, event.effectId);
}

/** Shared by every record without outputs: one array fewer per event. */
const NO_OUTPUTS: readonly StoredOutput[] = Object.freeze([]);

/** The op that records an applied effect with its outputs, written in one batch with the effect's state. */
export function effectRecordOp(ctx: EngineContext, event: EngineEvent, outputs: readonly OutRecord[], key = effectKey(ctx, event)!): StoreOp {
  const record: EffectRecord = {
    topic: event.topic,
    partition: event.partition,
    offset: event.offset,
    key: event.key,
    effectId: event.effectId,
    appliedAtMs: ctx.clock.now(),
    outputs: outputs.length === 0 ? NO_OUTPUTS : outputs.map(storeOutput),
  };
  return { type: 'put', key, value: record };
}

/** The record that ends a discarded event for good, written with its removal from its parked key. */
export function discardRecordOp(ctx: EngineContext, event: Omit<EngineEvent, 'value'>, key = effectKey(ctx, event)!): StoreOp {
  const record: EffectRecord = { ...where(event), appliedAtMs: ctx.clock.now(), discardedAtMs: ctx.clock.now(), outputs: NO_OUTPUTS };
  return { type: 'put', key, value: record };
}
