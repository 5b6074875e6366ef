import { pino } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadCompiled } from './compiled.js';
import { Meter, send } from './meter.js';
import type { ParentMessage, VariantResult, VariantSpec } from './spec.js';
import { benchTopology } from './topology.js';

/**
 * orderly's worker: the real runTopology (KafkaLog, Engine, LevelDB state) on the benchmark's
 * topology, compiled ({@link loadCompiled}: `dist/`, or `ORDERLY_BENCH_DIST`). Its end point is the engine's commit reaching every partition's end offset; with
 * `holdMs` (the backlog run) it stops that long after the first record instead, and `staged` (the
 * soak) when the benchmark tells it to.
 */
export async function runOrderlyWorker(spec: VariantSpec): Promise<VariantResult> {
  const compiled = await loadCompiled();
  const { finishedOutcomes } = compiled.orderly;
  let finished = 0;
  let lastFinishedMs = 0;
  const meter = new Meter(() => finished);
  const committed = new Map<number, number>();
  let reachedEnd!: () => void;
  const end = new Promise<void>((resolve) => (reachedEnd = resolve));
  const atEnd = () => !spec.staged && spec.ends.every((offset, partition) => offset === 0 || (committed.get(partition) ?? 0) >= offset);
  // A staged run (the soak) ends when the benchmark says so, once it has measured the end.
  if (spec.staged) process.on('message', (message: ParentMessage) => message.type === 'stop' && reachedEnd());
  // The soak's marks not reached yet, ascending.
  const marks = [...(spec.marks ?? [])].sort((a, b) => a - b);
  const passMarks = () => {
    let total = 0;
    for (const offset of committed.values()) total += offset;
    while (marks.length > 0 && total >= marks[0]!) send({ type: 'mark', mark: marks.shift()! });
  };
  const worker = await compiled.kafka.runTopology({
    topology: benchTopology(compiled, {
      topic: spec.topic,
      decideMs: spec.decideMs,
      maxInFlight: spec.maxInFlight,
      ...(spec.perKeyState ? { perKeyState: true } : {}),
    }),
    bootstrap: spec.bootstrap,
    group: spec.group,
    stateDir: spec.stateDir,
    logger: pino({ level: 'warn' }, pino.destination(2)),
    commit: { everyMs: spec.commitEveryMs },
    ...(spec.changelogConfig ? { changelogTopicConfig: spec.changelogConfig } : {}),
    ...(spec.maxBuffered ? { maxBufferedPerPartition: spec.maxBuffered } : {}),
    ...(spec.storedFormat ? { storedFormat: spec.storedFormat } : {}),
    ...(spec.consumerConfig || spec.producerConfig
      ? {
          kafka: {
            ...(spec.consumerConfig ? { consumerConfig: spec.consumerConfig } : {}),
            ...(spec.producerConfig ? { producerConfig: spec.producerConfig } : {}),
          },
        }
      : {}),
    observer: {
      modelCall: () => meter.first(),
      outcome(event) {
        if (!finishedOutcomes.has(event.outcome)) return;
        finished += 1;
        lastFinishedMs = meter.elapsedMs();
      },
      committed(commit) {
        committed.set(commit.partition, commit.offset);
        passMarks();
        if (atEnd()) reachedEnd();
      },
    },
  });
  try {
    if (spec.holdMs === undefined) {
      await Promise.race([end, worker.done]);
    } else {
      while (!meter.started) await Promise.race([sleep(50), worker.done]);
      await Promise.race([sleep(spec.holdMs), worker.done]);
    }
    const received = worker.engine.metrics().received;
    return meter.end({ lastFinishedMs: Math.round(lastFinishedMs), received });
  } finally {
    await worker.stop();
    await worker.done;
  }
}
