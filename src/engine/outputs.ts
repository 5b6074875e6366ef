import type { OutRecord } from '../ports/log.js';

/** The header that carries an output's effect id, so readers can drop the copies a redelivery makes. */
export const EFFECT_ID_HEADER = 'orderly-effect-id';

/** An output record as an effect record keeps it, to send again if the event is redelivered. */
export interface StoredOutput {
  readonly topic: string;
  readonly key: string | null;
  readonly valueBase64: string | null;
  readonly headers: Record<string, string>;
}

export function storeOutput(record: OutRecord): StoredOutput {
  return {
    topic: record.topic,
    key: record.key,
    valueBase64: record.value === null ? null : Buffer.from(record.value).toString('base64'),
    headers: { ...record.headers },
  };
}

export function loadOutput(stored: StoredOutput): OutRecord {
  return {
    topic: stored.topic,
    key: stored.key,
    value: stored.valueBase64 === null ? null : Buffer.from(stored.valueBase64, 'base64'),
    headers: stored.headers,
  };
}

/** What orderly records under an effect id once the event has ended for good: its effect applied, or discarded. */
export interface EffectRecord {
  readonly effectId: string;
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly appliedAtMs: number;
  readonly outputs: readonly StoredOutput[];
  /** Set when a person discarded the event instead: it ended for good, with no effect. */
  readonly discardedAtMs?: number;
}
