/**
 * `restoreMsFor12Partitions` of the Kafka benchmark (issue 15 §5): a worker restarting on an empty
 * state directory takes over 12 partitions whose changelogs hold about 10,000 state keys each
 * (one effect record per event of the disputes-shaped topology, written by a first worker that ran
 * 10,000 events per partition); the figure runs from its assignment until every partition has
 * processed an event (one new event per partition waits above the committed offsets).
 *
 * `measureRestore` runs from benchmarks/kafka/run.ts; the restarting worker runs in a child
 * process of its own: `node --import tsx restore.ts '<RestoreSpec as JSON>'`.
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setImmediate as yieldToLoop, setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import type { RestoreReport } from '../../src/kafka/changelog/changelogStore.js';
import type { Progress } from '../progress.js';
import { runVariant } from './child.js';
import { loadCompiled } from './compiled.js';
import { benchEvent } from './events.js';
import { connectBulkProducer, createTopic } from './prefill.js';
import { benchTopology } from './topology.js';

const SELF = fileURLToPath(import.meta.url);
/** More Node flags for the restarting worker, as for the variants (child.ts): `--cpu-prof --cpu-prof-dir=D` profiles it. */
const EXTRA_ARGS = (process.env.ORDERLY_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
const QUEUE_FULL = -184;

/** What the restarting worker is asked to do. */
interface RestoreSpec {
  readonly bootstrap: string;
  readonly topic: string;
  readonly group: string;
  readonly stateDir: string;
  readonly partitions: number;
  readonly maxInFlight: number;
  readonly storedFormat?: 2 | 4;
}

/** What the restart measured. */
export interface RestoreResult {
  /** From the worker's assignment until every partition had processed an event. */
  readonly restoreMs: number;
  /** Changelog records the worker read, over all partitions. */
  readonly records: number;
  /** CPU time of the restarting worker's process (user + system, every thread) over the same span. */
  readonly cpuMs: number;
  /** `cpuMs` per changelog record read, in µs: what a restore costs per record (the take-over's other work and the 12 events included). */
  readonly cpuMicrosPerRecord: number;
  /** Per partition: its restore's report (records, ms) and when its first event finished, ms after the assignment. */
  readonly partitions: ReadonlyArray<{ readonly partition: number; readonly records: number; readonly restoreTookMs: number; readonly firstEventMs: number }>;
}

export interface RestoreBenchOptions {
  readonly bootstrap: string;
  /** The topic's name; its consumer group is `<topic>.group`. */
  readonly topic: string;
  readonly partitions: number;
  /** Events per partition run by the first worker: each leaves one effect record (a state key) in the changelog. */
  readonly keysPerPartition: number;
  readonly maxInFlight: number;
  readonly commitEveryMs: number;
  /** Where both workers' state directories go. */
  readonly stateRoot: string;
  /** Both workers' `storedFormat` (the runner's default when absent). */
  readonly storedFormat?: 2 | 4;
}

/** Fills the state, restarts a worker on an empty state directory, and times its restore. */
export async function measureRestore(options: RestoreBenchOptions, progress: Progress): Promise<RestoreResult> {
  const { bootstrap, topic, partitions, keysPerPartition } = options;
  const group = `${topic}.group`;
  await createTopic(bootstrap, topic, partitions);
  const ends = await produceEvents(bootstrap, topic, partitions, 0, keysPerPartition);
  // The first worker runs every event and commits: its changelogs hold the state a restart reads.
  const fill = progress.phase('restore: state', partitions * keysPerPartition, 'events');
  const first = await runVariant(
    {
      kind: 'orderly',
      bootstrap,
      topic,
      group,
      ends,
      events: partitions * keysPerPartition,
      decideMs: 0,
      maxInFlight: options.maxInFlight,
      commitEveryMs: options.commitEveryMs,
      stateDir: join(options.stateRoot, 'restore-first'),
      ...(options.storedFormat ? { storedFormat: options.storedFormat } : {}),
    },
    fill,
    20 * 60_000,
  );
  fill.finish(`${first.events} events, ${first.eventsPerSec} events/s`);
  await produceEvents(bootstrap, topic, partitions, keysPerPartition, 1);
  const phase = progress.phase('restore: restart', partitions, 'partitions');
  const result = await restartWorker({
    bootstrap,
    topic,
    group,
    stateDir: join(options.stateRoot, 'restore-second'),
    partitions,
    maxInFlight: options.maxInFlight,
    ...(options.storedFormat ? { storedFormat: options.storedFormat } : {}),
  });
  phase.finish(
    `${result.records} changelog records, every partition running after ${result.restoreMs} ms, ${result.cpuMs} ms of CPU (${result.cpuMicrosPerRecord} µs per record)`,
  );
  return result;
}

/** Writes `perPartition` events to each partition (event numbers from `from * partitions`), and returns the end offsets. */
async function produceEvents(bootstrap: string, topic: string, partitions: number, from: number, perPartition: number): Promise<number[]> {
  const producer = await connectBulkProducer(bootstrap, 'orderly-bench-restore');
  try {
    // Keys are accounts of one partition each, so a key's events stay in one partition.
    const keys = partitions * 1_000;
    for (let j = from; j < from + perPartition; j++) {
      for (let partition = 0; partition < partitions; partition++) {
        const event = benchEvent((j % 1_000) * partitions + partition, keys);
        const value = Buffer.from(JSON.stringify({ ...event, disputeId: `d-${j}-${partition}` }));
        for (;;) {
          try {
            producer.produce(topic, partition, value, event.account, null);
            break;
          } catch (error) {
            if ((error as { code?: number }).code !== QUEUE_FULL) throw error;
            await sleep(5);
          }
        }
      }
      if (j % 2_000 === 0) await yieldToLoop();
    }
    await new Promise<void>((resolve, reject) => producer.flush(120_000, (error) => (error ? reject(error) : resolve())));
    return Array.from({ length: partitions }, () => from + perPartition);
  } finally {
    await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
  }
}

/** Runs the restarting worker in a child process; resolves with what it measured. */
function restartWorker(spec: RestoreSpec): Promise<RestoreResult> {
  return new Promise((resolve, reject) => {
    const child = fork(SELF, [JSON.stringify(spec)], { execArgv: ['--import', 'tsx', ...EXTRA_ARGS], stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    child.stdout!.pipe(process.stderr, { end: false });
    child.stderr!.pipe(process.stderr, { end: false });
    let result: RestoreResult | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('bench: the restarting worker did not have every partition running within 5 minutes'));
    }, 5 * 60_000);
    child.on('message', (message: RestoreResult) => (result = message));
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (result && code === 0) resolve(result);
      else reject(new Error(`bench: the restarting worker exited with ${signal ?? `code ${code}`} before its result`));
    });
  });
}

/** The child: a worker on an empty state directory, timed from its assignment to an event run on every partition. */
async function runRestartingWorker(spec: RestoreSpec): Promise<RestoreResult> {
  let assignedAt: number | undefined;
  let cpuAtAssigned: NodeJS.CpuUsage | undefined;
  let cpuUntilRunning: NodeJS.CpuUsage | undefined;
  const firstEvent = new Map<number, number>();
  const restored = new Map<number, RestoreReport>();
  let allRunning!: () => void;
  const running = new Promise<void>((resolve) => (allRunning = resolve));
  // The worker's 'assigned' line marks the assignment (the first one: the group has no other member).
  const logger = pino(
    {
      level: 'info',
      hooks: {
        logMethod(args, method) {
          if (assignedAt === undefined && args.some((a) => a === 'assigned')) {
            assignedAt = performance.now();
            cpuAtAssigned = process.cpuUsage();
          }
          method.apply(this, args);
        },
      },
    },
    pino.destination({ dest: '/dev/null' }),
  );
  // orderly compiled, as the other orderly variants run it (compiled.ts).
  const compiled = await loadCompiled();
  const worker = await compiled.kafka.runTopology({
    topology: benchTopology(compiled, { topic: spec.topic, decideMs: 0, maxInFlight: spec.maxInFlight }),
    bootstrap: spec.bootstrap,
    group: spec.group,
    stateDir: spec.stateDir,
    logger,
    ...(spec.storedFormat ? { storedFormat: spec.storedFormat } : {}),
    onRestored: (report) => restored.set(report.partition, report),
    observer: {
      outcome(event) {
        if (firstEvent.has(event.partition)) return;
        firstEvent.set(event.partition, performance.now());
        if (firstEvent.size === spec.partitions) {
          cpuUntilRunning = process.cpuUsage(cpuAtAssigned);
          allRunning();
        }
      },
    },
  });
  try {
    await Promise.race([running, worker.done]);
    if (assignedAt === undefined || firstEvent.size < spec.partitions) throw new Error('bench: the restarting worker stopped before every partition ran');
    const at = assignedAt;
    const partitions = [...firstEvent].map(([partition, ms]) => ({
      partition,
      records: restored.get(partition)?.records ?? 0,
      restoreTookMs: restored.get(partition)?.tookMs ?? 0,
      firstEventMs: Math.round(ms - at),
    }));
    partitions.sort((a, b) => a.partition - b.partition);
    const records = partitions.reduce((n, p) => n + p.records, 0);
    const cpuMs = cpuUntilRunning === undefined ? 0 : Math.round((cpuUntilRunning.user + cpuUntilRunning.system) / 1_000);
    return {
      restoreMs: Math.max(...partitions.map((p) => p.firstEventMs)),
      records,
      cpuMs,
      cpuMicrosPerRecord: records === 0 ? 0 : Math.round((cpuMs * 1_000) / records),
      partitions,
    };
  } finally {
    await worker.stop();
    await worker.done;
  }
}

if (process.argv[1] === SELF && process.send) {
  runRestartingWorker(JSON.parse(process.argv[2]!) as RestoreSpec)
    .then((result) => process.send!(result, () => process.exit(0)))
    .catch((error: unknown) => {
      process.stderr.write(`restore: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    });
}
