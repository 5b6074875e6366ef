import type { Headers, LogRecord } from '../ports/log.js';
import type { RecordMeta } from '../graph/nodes.js';

/**
 * An event as the engine carries it: the record's place in the log, its raw bytes, and the id of
 * its effect. A parked event is stored in this form and replayed from it.
 */
export interface EngineEvent {
  readonly effectId: string;
  /** The key lane the event belongs to: its key, or a lane of its own when it has none. */
  readonly lane: string;
  readonly key: string | null;
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestampMs: number;
  readonly headers: Headers;
  /** The raw value, base64, so that the event survives a JSON store and a topic unchanged. */
  readonly valueBase64: string | null;
}

export function toEngineEvent(record: LogRecord, effectId: string): EngineEvent {
  return {
    effectId,
    lane: laneOf(record),
    key: record.key,
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    timestampMs: record.timestampMs,
    headers: record.headers,
    valueBase64: record.value === null ? null : Buffer.from(record.value).toString('base64'),
  };
}

/** Events of one key share a lane; an event with no key is a lane of its own. */
export function laneOf(record: { key: string | null; offset: number }): string {
  return record.key ?? `~no-key/${record.offset}`;
}

/** The default effect id: where the event first stood in the log. */
export function offsetEffectId(record: { topic: string; partition: number; offset: number }): string {
  return `${record.topic}/${record.partition}/${record.offset}`;
}

export function rawValue(event: EngineEvent): Uint8Array | null {
  return event.valueBase64 === null ? null : Buffer.from(event.valueBase64, 'base64');
}

export function metaOf(event: EngineEvent): RecordMeta {
  return {
    topic: event.topic,
    partition: event.partition,
    offset: event.offset,
    timestampMs: event.timestampMs,
    headers: event.headers,
  };
}

/** Where an event stands, as outcomes and records report it. */
export function where(event: EngineEvent) {
  return { topic: event.topic, partition: event.partition, offset: event.offset, key: event.key, effectId: event.effectId };
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
