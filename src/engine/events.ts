import type { Headers, LogRecord } from '../ports/log.js';
import type { RecordMeta } from '../graph/nodes.js';

/**
 * An event as the engine carries it: the record's place in the log, its raw bytes, and the id of
 * its effect.
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
  readonly value: Uint8Array | null;
}

/** An event as the store keeps it (a parked or held one): its value in base64, so it survives JSON unchanged. */
export type StoredEvent = Omit<EngineEvent, 'value'> & { readonly valueBase64: string | null };

export function toStoredEvent({ value, ...rest }: EngineEvent): StoredEvent {
  return { ...rest, valueBase64: value === null ? null : Buffer.from(value).toString('base64') };
}

export function fromStoredEvent({ valueBase64, ...rest }: StoredEvent): EngineEvent {
  return { ...rest, value: valueBase64 === null ? null : Buffer.from(valueBase64, 'base64') };
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
    value: record.value,
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

export function metaOf(event: Omit<EngineEvent, 'value'>): RecordMeta {
  return {
    topic: event.topic,
    partition: event.partition,
    offset: event.offset,
    timestampMs: event.timestampMs,
    headers: event.headers,
  };
}

/** Where an event stands, as outcomes and records report it. */
export function where(event: Omit<EngineEvent, 'value'>) {
  return { topic: event.topic, partition: event.partition, offset: event.offset, key: event.key, effectId: event.effectId };
}

/** The most of a thrown value's text an error record keeps: it goes into headers, park records and their changelogs. */
const MESSAGE_MAX_CHARS = 4_096;

/**
 * What a thrown value says, for an error record: an Error's message; a value with a `toString`
 * of its own, that; anything else (a user's code may throw `{ code: 42 }`) as JSON where JSON can
 * hold it, so its content is kept, else as text. Past 4,096 characters it is cut, with a mark.
 */
export function messageOf(error: unknown): string {
  const text = textOf(error);
  return text.length <= MESSAGE_MAX_CHARS ? text : `${text.slice(0, MESSAGE_MAX_CHARS)}... (${text.length - MESSAGE_MAX_CHARS} more characters)`;
}

function textOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'object' && error !== null && error.toString === Object.prototype.toString) {
    try {
      const json = JSON.stringify(error) as string | undefined;
      if (json !== undefined && json !== '{}') return json;
    } catch {
      // A cycle or a BigInt: its text below.
    }
  }
  return String(error);
}
