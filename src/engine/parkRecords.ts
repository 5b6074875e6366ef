import type { OutRecord } from '../ports/log.js';
import { EFFECT_ID_HEADER } from './outputs.js';
import type { ParkedEvent } from './parkedKeys.js';

/** The header that says why a record is on the parking topic: POISON or HELD. */
export const PARK_REASON_HEADER = 'orderly-park-reason';

/**
 * A parked event as the parking topic carries it: JSON with the event (its raw value in base64),
 * its attempts and each error. On an at-least-once log a crash while parking may write a record
 * twice, with one effect id and `parkedAtMs`; on an exactly-once log it is written once.
 */
export function parkRecord(topic: string, parked: ParkedEvent): OutRecord {
  const body = {
    effectId: parked.event.effectId,
    reason: parked.reason,
    step: parked.step,
    key: parked.event.key,
    source: { topic: parked.event.topic, partition: parked.event.partition, offset: parked.event.offset },
    timestampMs: parked.event.timestampMs,
    valueBase64: parked.event.valueBase64,
    attempts: parked.attempts,
    errors: parked.errors,
    parkedAtMs: parked.parkedAtMs,
  };
  return {
    topic,
    key: parked.event.key,
    value: new TextEncoder().encode(JSON.stringify(body)),
    headers: { [EFFECT_ID_HEADER]: parked.event.effectId, [PARK_REASON_HEADER]: parked.reason },
  };
}
