import type { Headers } from '../ports/log.js';

/** Where an event came from. */
export interface RecordMeta {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestampMs: number;
  readonly headers: Headers;
}
