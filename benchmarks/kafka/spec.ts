import type { EndOffsets } from './events.js';

/** What one variant (run in a child process) is asked to do. */
export interface VariantSpec {
  readonly kind: 'raw' | 'serial' | 'orderly';
  readonly bootstrap: string;
  readonly topic: string;
  /** Its own consumer group: every variant reads the topic from the start. */
  readonly group: string;
  /** Each partition's end offset: the variant is done when its commits reach them (raw, orderly), or after `events` (serial). */
  readonly ends: EndOffsets;
  /** Events to finish: all of the topic, or fewer for the serial worker. */
  readonly events: number;
  /** The decide's latency; 0 answers at once. */
  readonly decideMs: number;
  /** orderly only. */
  readonly maxInFlight: number;
  readonly commitEveryMs: number;
  readonly stateDir: string;
  /** orderly only: unfinished events per partition before it is paused; absent: orderly's default. */
  readonly maxBuffered?: number;
  /** orderly only: `runTopology`'s storedFormat. */
  readonly storedFormat?: 2 | 4;
  /** orderly only: librdkafka properties of its consumer, over orderly's defaults. */
  readonly consumerConfig?: Readonly<Record<string, string>>;
  /** orderly only: librdkafka properties of its producer (outputs and changelogs), over orderly's defaults. */
  readonly producerConfig?: Readonly<Record<string, string>>;
  /** orderly only: run this long after the first record, then stop, however far it got (the backlog run). */
  readonly holdMs?: number;
  /** orderly only (the soak): the effect keeps a row per key, not per event (BenchTopologyOptions.perKeyState). */
  readonly perKeyState?: boolean;
  /** orderly only (the soak): tell the benchmark when the committed offsets first add up to each of these, so it measures the state there. */
  readonly marks?: readonly number[];
  /**
   * orderly only (the soak): the benchmark writes the topic in stages while the worker runs, so
   * `ends` are only what was there at the start; the worker runs until the benchmark tells it to
   * stop ({@link ParentMessage}), after its commits add up to `events`.
   */
  readonly staged?: boolean;
  /** orderly only: settings of the changelog topics it creates, over orderly's (RunTopologyOptions.changelogTopicConfig). */
  readonly changelogConfig?: Readonly<Record<string, string>>;
}

/** What a variant measured, sent to the parent when it is done. */
export interface VariantResult {
  /** Events finished (for orderly: with a finished outcome) when the variant stopped. */
  readonly events: number;
  /** From the first record received to the end point (all committed), or the hold time. */
  readonly wallMs: number;
  /** orderly: from the first record to the last event finished, before its commit. */
  readonly lastFinishedMs?: number;
  /** CPU time of the process (user + system, every thread) over the whole child, start-up included. */
  readonly cpuMs: number;
  /** CPU time between the first record and the end point. */
  readonly measuredCpuMs: number;
  /** CPU time from the first record to the end point by kind of thread (main, librdkafka, other), from /proc. */
  readonly threadCpuMs: Readonly<Record<string, number>>;
  /** process.memoryUsage() at the end point, MiB: what of the RSS is V8's heap, buffers, the rest native (librdkafka, LevelDB, code). */
  readonly memory: { readonly rss: number; readonly heapTotal: number; readonly heapUsed: number; readonly external: number; readonly arrayBuffers: number };
  /** orderly: events the log delivered to the engine (the backlog run: how much it buffered). */
  readonly received?: number;
}

/** Messages of the benchmark to a variant child: a staged worker stops when told. */
export type ParentMessage = { readonly type: 'stop' };

/** Messages of a variant child to the benchmark, over the IPC channel. */
export type VariantMessage =
  | { readonly type: 'progress'; readonly done: number }
  | { readonly type: 'first' }
  /** The committed offsets reached `mark` events (see VariantSpec.marks). */
  | { readonly type: 'mark'; readonly mark: number }
  | { readonly type: 'result'; readonly result: VariantResult };
