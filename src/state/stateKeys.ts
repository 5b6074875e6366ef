import type { TopicPartition } from '../ports/log.js';

// Every key orderly writes, in one place, so that the layout of the state is readable at a glance.
// A partition's keys share a prefix, so its state can be scanned (and, on Kafka, handed over) alone.

const part = (tp: TopicPartition): string => `${encodeURIComponent(tp.topic)}/${tp.partition}`;
const pad = (n: number): string => n.toString().padStart(16, '0');
const enc = (lane: string): string => encodeURIComponent(lane);

export const stateKeys = {
  /** The record of an applied effect, by effect id. */
  effect: (store: string, effectId: string) => `effect/${store}/${effectId}`,
  effectPrefix: (store: string) => `effect/${store}/`,
  /** Rows that an effect wrote to its own state table. */
  table: (store: string, row: string) => `table/${store}/${row}`,
  /** Failed attempts of one event at a step. */
  attempts: (step: string, tp: TopicPartition, offset: number) => `attempts/${step}/${part(tp)}/${pad(offset)}`,
  /** A parked key of a partition. */
  parkedKey: (step: string, tp: TopicPartition, lane: string) => `parked/${step}/${part(tp)}/${enc(lane)}`,
  parkedKeyPrefix: (step: string, tp: TopicPartition) => `parked/${step}/${part(tp)}/`,
  /** One event held behind a parked key, in arrival order. */
  heldEvent: (step: string, tp: TopicPartition, lane: string, seq: number) =>
    `held/${step}/${part(tp)}/${enc(lane)}/${pad(seq)}`,
  /** Which parked key holds an event, by effect id: a redelivered held event is not held twice. */
  heldIndex: (step: string, effectId: string) => `heldid/${step}/${effectId}`,
} as const;
