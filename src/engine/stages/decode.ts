import type { SourceNode } from '../../graph/nodes.js';
import type { LogRecord } from '../../ports/log.js';
import { deadLetterRecord } from '../deadLetters.js';
import type { EngineContext } from '../engineContext.js';
import { messageOf, metaOf, offsetEffectId, toEngineEvent, type EngineEvent } from '../events.js';
import { Outcome } from '../outcomes.js';

/** A record decoded into an event with its value and effect id, or the reason it could not be. */
export type Decoded =
  { readonly ok: true; readonly event: EngineEvent; readonly value: unknown } | { readonly ok: false; readonly event: EngineEvent; readonly error: string };

/** Stage 1, decode: the record's value through the source's serde, and its effect id. */
export function decode(ctx: EngineContext, record: LogRecord): Decoded {
  return decodeRecord(ctx.topology.source, record);
}

/** A record of `source` decoded into an event with its value and effect id (declared, or its offset's). */
export function decodeRecord(source: SourceNode, record: LogRecord): Decoded {
  const fallback = toEngineEvent(record, offsetEffectId(record));
  if (record.value === null) return { ok: false, event: fallback, error: `${source.name}: the record has no value (a tombstone)` };
  let value: unknown;
  try {
    value = source.value.deserialize(record.value);
  } catch (error) {
    return { ok: false, event: fallback, error: `${source.name}: ${source.value.name} could not decode the value: ${messageOf(error)}` };
  }
  // Called alone, not as the source node's method (see runAgentStep).
  const idOf = source.effectId;
  if (!idOf) return { ok: true, event: fallback, value };
  try {
    const effectId = idOf({ key: record.key, value, record: metaOf(fallback) });
    if (typeof effectId !== 'string' || effectId === '') throw new Error(`it returned ${JSON.stringify(effectId)}, not a non-empty string`);
    return { ok: true, event: toEngineEvent(record, effectId), value };
  } catch (error) {
    return { ok: false, event: fallback, error: `${source.name}: effectId failed: ${messageOf(error)}` };
  }
}

/** Decodes a stored (parked) event again. */
export function decodeStored(ctx: EngineContext, event: EngineEvent): unknown {
  return ctx.topology.source.value.deserialize(event.value!);
}

/** An undecodable record goes to the dead-letter topic with its error, and finishes there (its response, if any, says `failed`). */
export async function deadLetterUndecodable(ctx: EngineContext, event: EngineEvent, error: string): Promise<void> {
  await ctx.end.atomically(event, () =>
    ctx.log.produce([deadLetterRecord(ctx.topology.source.deadLetterTopic, event, error), ...ctx.jobs.response(event, { state: 'failed', reason: error })]),
  );
  ctx.report(Outcome.DEAD_LETTERED, event, { error });
}
