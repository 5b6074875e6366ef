import type { OutRecord } from '../ports/log.js';
import type { AttemptError } from './attemptsRecords.js';
import type { EngineEvent } from './events.js';

/** The header that carries a dead-lettered event's error (the last one, if it had several attempts). */
export const DEAD_LETTER_ERROR_HEADER = 'orderly-error';
/** The header that carries a dead-lettered event's effect id. */
export const DEAD_LETTER_SOURCE_HEADER = 'orderly-source';
/** The header that carries how many attempts an event had before it was dead-lettered. */
export const DEAD_LETTER_ATTEMPTS_HEADER = 'orderly-attempts';
/** The header that carries every attempt's error, as JSON: `[{ attempt, atMs, error }]`. */
export const DEAD_LETTER_ERRORS_HEADER = 'orderly-errors';

/**
 * A dead-letter record: the event's key, raw value and headers as they were on the log, with its
 * error and its effect id in headers. An event whose attempts ran out (onExhausted 'dlq') also
 * carries its attempts and each attempt's error.
 */
export function deadLetterRecord(topic: string, event: EngineEvent, error: string, attempts?: readonly AttemptError[]): OutRecord {
  return {
    topic,
    key: event.key,
    value: event.value,
    headers: {
      ...event.headers,
      [DEAD_LETTER_ERROR_HEADER]: error,
      [DEAD_LETTER_SOURCE_HEADER]: event.effectId,
      ...(attempts ? { [DEAD_LETTER_ATTEMPTS_HEADER]: String(attempts.length), [DEAD_LETTER_ERRORS_HEADER]: JSON.stringify(attempts) } : {}),
    },
  };
}
