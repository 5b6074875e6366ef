// Runs a topology on the engine with the real clock over a one-partition log held in memory: for
// steps that wait for real HTTP, which the test driver's virtual clock cannot.
import {
  Engine,
  finishedOutcomes,
  openMemoryStore,
  type CommitOffset,
  type Log,
  type LogListener,
  type LogRecord,
  type OutRecord,
  type OutcomeEvent,
  type Topology,
} from '../../src/index.js';
import { systemClock, systemRandom } from '../../src/kafka/index.js';

export interface EngineRunEvent {
  readonly key: string;
  readonly value: unknown;
}

export interface EngineRun {
  readonly outcomes: readonly OutcomeEvent[];
  /** Every call of the agent step, when it started. */
  readonly modelCalls: ReadonlyArray<{ readonly effectId: string; readonly atMs: number; readonly attempt: number }>;
  readonly outputs: readonly OutRecord[];
  readonly committed: number;
}

/** Runs `events` (JSON values) through `topology` until each is finished, or fails after `timeoutMs`. */
export async function runOnEngine(topology: Topology, events: readonly EngineRunEvent[], timeoutMs: number): Promise<EngineRun> {
  const topic = topology.source.topic;
  const records: LogRecord[] = events.map((e, offset) => ({
    topic,
    partition: 0,
    offset,
    key: e.key,
    value: new TextEncoder().encode(JSON.stringify(e.value)),
    timestampMs: Date.now(),
    headers: {},
  }));
  const outputs: OutRecord[] = [];
  const outcomes: OutcomeEvent[] = [];
  const modelCalls: Array<{ effectId: string; atMs: number; attempt: number }> = [];
  let committed = 0;
  let allFinished!: () => void;
  let failed!: (error: Error) => void;
  const done = new Promise<void>((resolve, reject) => ((allFinished = resolve), (failed = reject)));
  const finished = new Set<number>();

  const log: Log = {
    async subscribe(_topics, listener: LogListener) {
      queueMicrotask(() => void listener.assigned([{ topic, partition: 0 }]).then(() => listener.records(records), failed));
    },
    pause: () => undefined,
    resume: () => undefined,
    highWatermark: () => records.length,
    async commit(offsets: readonly CommitOffset[]) {
      for (const o of offsets) committed = Math.max(committed, o.offset);
    },
    async produce(out) {
      outputs.push(...out);
    },
    close: async () => undefined,
  };
  const store = await openMemoryStore();
  const engine = new Engine({
    topology,
    log,
    clock: systemClock,
    store,
    random: systemRandom,
    commit: 'each',
    observer: {
      outcome(event) {
        outcomes.push(event);
        if (finishedOutcomes.has(event.outcome)) finished.add(event.offset);
        if (finished.size === events.length) allFinished();
      },
      modelCall: (call) => modelCalls.push({ effectId: call.effectId, atMs: call.atMs, attempt: call.attempt }),
      fatal: failed,
    },
  });
  const timer = setTimeout(() => failed(new Error(`runOnEngine: ${finished.size} of ${events.length} events finished in ${timeoutMs} ms`)), timeoutMs);
  try {
    await engine.start();
    await done;
  } finally {
    clearTimeout(timer);
    await engine.stop();
    await store.close();
  }
  return { outcomes, modelCalls, outputs, committed };
}
