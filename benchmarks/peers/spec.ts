import type { EndOffsets } from '../kafka/events.js';

/** The four contenders of the peers benchmark, in the order they run. */
export const CONTENDERS = ['raw', 'kafkaStreams', 'parallelConsumer', 'orderly'] as const;
export type Contender = (typeof CONTENDERS)[number];

/** The contenders that do the work (state and output); raw only consumes. */
export const WORKERS = ['kafkaStreams', 'parallelConsumer', 'orderly'] as const satisfies readonly Contender[];

/** What one contender process is asked to do. */
export interface ContenderSpec {
  readonly contender: Contender;
  readonly bootstrap: string;
  readonly input: string;
  /** Its own output topic (raw writes none). */
  readonly output: string;
  /** Its own consumer group (Kafka Streams: its application.id): it reads the input from the start. */
  readonly group: string;
  /** Each input partition's end offset: the contender is done when its group's commits reach them. */
  readonly ends: EndOffsets;
  /** Wall-clock waiting (no CPU) per event in place of instant work; 0 for the fast run. */
  readonly waitMs: number;
  /** orderly's maxInFlight: events (of distinct keys) in flight per partition. */
  readonly maxInFlight: number;
  /** Parallel Consumer's maxConcurrency: its worker threads. */
  readonly concurrency: number;
  /** How often every contender commits (Kafka Streams' commit.interval.ms, Parallel Consumer's commitInterval, orderly's commit.everyMs). */
  readonly commitEveryMs: number;
  /** orderly's storedFormat (the others ignore it). */
  readonly storedFormat: 2 | 4;
  /** Its own state directory. */
  readonly stateDir: string;
}

/** Messages of a Node contender to the benchmark over the IPC channel (as benchmarks/kafka/meter.ts sends them). */
export type ContenderMessage = { readonly type: 'first' } | { readonly type: string };
