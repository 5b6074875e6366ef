/**
 * orderly beside its peers on one broker and one input (issue 15 §1): the raw consumer, Kafka
 * Streams, Parallel Consumer (KEY ordering) and orderly, each in its own process, one after
 * another, doing the same work; then the three that work again with a wait per event.
 * `npm run -s bench:peers` prints a table, `-- --json` one JSON object; progress goes to stderr.
 * Starts (and stops) its own broker unless given `--bootstrap`. See docs/benchmarks.md, "Beside the peers".
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { findJava } from '../../tools/kafka/jars.js';
import { totalOf, type EndOffsets } from '../kafka/events.js';
import { createTopic, deleteTopics, prefill } from '../kafka/prefill.js';
import { describeMachine } from '../machine.js';
import { progressOnStderr, type Progress } from '../progress.js';
import { peersBroker } from './broker.js';
import { checkOutput, expectedOrder, type ExpectedOrder } from './checkOutput.js';
import { ensureJavaBuild, javaClasspath, JAVA_MODULES, type JavaContender } from './javaBuild.js';
import { killContenders, runContender, type JavaCommand } from './launch.js';
import { readTopic } from './readTopic.js';
import { settle } from './settle.js';
import { formatPeersTable, headlineFigures, type ContenderRun, type PeersReport, type PeersSettings } from './report.js';
import { CONTENDERS, WORKERS, type Contender, type ContenderSpec } from './spec.js';

const usage = `npm run -s bench:peers -- [--json] [--bootstrap HOST:PORT | --port P] [--events N] [--keys N] [--partitions N]
  [--slow-events N] [--slow-wait-ms MS] [--max-in-flight N] [--pc-max-concurrency N] [--commit-every-ms MS] [--stored-format 2|4] [--contenders raw,kafkaStreams,parallelConsumer,orderly]
  [--orderly-workers N] [--settle-load L]`;

const TIMEOUT_MS = 20 * 60_000;
/** The longest wait for the load to settle before a contender (see {@link settle}). */
const SETTLE_MAX_MS = 180_000;

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      json: { type: 'boolean', default: false },
      bootstrap: { type: 'string' },
      port: { type: 'string', default: process.env.ORDERLY_BENCH_PEERS_PORT ?? '19292' },
      events: { type: 'string', default: '500000' },
      keys: { type: 'string', default: '10000' },
      partitions: { type: 'string', default: '8' },
      'slow-events': { type: 'string', default: '20000' },
      'slow-wait-ms': { type: 'string', default: '5' },
      'max-in-flight': { type: 'string', default: '32' },
      'pc-max-concurrency': { type: 'string' },
      'commit-every-ms': { type: 'string', default: '250' },
      'stored-format': { type: 'string', default: '4' },
      contenders: { type: 'string', default: CONTENDERS.join(',') },
      'orderly-workers': { type: 'string', default: '1' },
      'settle-load': { type: 'string', default: '1.5' },
      help: { type: 'boolean', default: false },
    },
  });
  const int = (name: keyof typeof values, min: number): number => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < min) throw new Error(`bench:peers: --${name} must be a whole number >= ${min}, got '${values[name]}'\n${usage}`);
    return n;
  };
  const contenders = values.contenders!.split(',').filter(Boolean);
  const unknown = contenders.filter((c) => !(CONTENDERS as readonly string[]).includes(c));
  if (unknown.length > 0 || contenders.length === 0)
    throw new Error(`bench:peers: --contenders takes some of ${CONTENDERS.join(',')}, got '${values.contenders}'`);
  const settleLoad = Number(values['settle-load']);
  if (!Number.isFinite(settleLoad) || settleLoad < 0)
    throw new Error(`bench:peers: --settle-load must be a number >= 0 (0: no wait), got '${values['settle-load']}'\n${usage}`);
  const storedFormat = values['stored-format'];
  if (storedFormat !== '2' && storedFormat !== '4') throw new Error(`bench:peers: --stored-format is 2 or 4, got '${storedFormat}'\n${usage}`);
  const events = int('events', 1);
  const partitions = int('partitions', 1);
  const maxInFlight = int('max-in-flight', 1);
  const settings: Omit<PeersSettings, 'broker'> = {
    events,
    keys: int('keys', 1),
    partitions,
    slowEvents: Math.min(events, int('slow-events', 1)),
    slowWaitMs: int('slow-wait-ms', 1),
    maxInFlight,
    // As many calls at once as orderly may have: its maxInFlight in each partition.
    parallelConsumerMaxConcurrency: values['pc-max-concurrency'] === undefined ? maxInFlight * partitions : int('pc-max-concurrency', 1),
    commitEveryMs: int('commit-every-ms', 1),
    storedFormat: Number(storedFormat) as 2 | 4,
    jvmOptions: process.env.ORDERLY_PEERS_JVM_OPTS ?? '-Xmx1g',
    contenders: CONTENDERS.filter((c) => contenders.includes(c)),
    orderlyWorkers: int('orderly-workers', 1),
    settleLoad,
  };
  return { json: values.json!, help: values.help!, bootstrap: values.bootstrap, port: int('port', 1), settings };
}

/** An input topic, prefilled, with its end offsets and each key's order as read back. */
interface Input {
  readonly topic: string;
  readonly ends: EndOffsets;
  readonly expected: ExpectedOrder;
}

/** What every contender's run shares. */
interface Bench {
  readonly run: string;
  readonly settings: Omit<PeersSettings, 'broker'>;
  readonly bootstrap: string;
  readonly stateRoot: string;
  readonly java: { readonly java: string; readonly buildDir: string } | undefined;
  readonly progress: Progress;
  /** Topics made, to delete from a cluster the run did not start. */
  readonly topics: string[];
}

/** Creates and fills an input topic, then reads it back for the output checks. */
async function prefillInput(bench: Bench, name: string, events: number): Promise<Input> {
  const s = bench.settings;
  const topic = `${bench.run}.${name}`;
  bench.topics.push(topic);
  const ends = await prefill(bench.bootstrap, { topic, events, partitions: s.partitions, keys: s.keys }, bench.progress);
  return { topic, ends, expected: expectedOrder(await readTopic(bench.bootstrap, topic)) };
}

function javaCommand(bench: Bench, contender: Contender): JavaCommand | undefined {
  if (!bench.java || !(contender in JAVA_MODULES)) return undefined;
  const module = contender as JavaContender;
  const jvmOptions = bench.settings.jvmOptions.split(/\s+/).filter(Boolean);
  return { java: bench.java.java, classpath: javaClasspath(bench.java.buildDir, module), mainClass: JAVA_MODULES[module].mainClass, jvmOptions };
}

/** Runs one contender over `input` and, for the three that write, checks its output before its figures count. */
async function measure(bench: Bench, contender: Contender, input: Input, waitMs: number): Promise<ContenderRun> {
  const s = bench.settings;
  const name = `${contender}${waitMs > 0 ? '-slow' : ''}`;
  const output = `${bench.run}.${name}.out`;
  if (contender !== 'raw') {
    bench.topics.push(output);
    await createTopic(bench.bootstrap, output, s.partitions);
  }
  const spec: ContenderSpec = {
    contender,
    bootstrap: bench.bootstrap,
    input: input.topic,
    output,
    group: `${bench.run}.${name}`,
    ends: input.ends,
    waitMs,
    maxInFlight: s.maxInFlight,
    concurrency: s.parallelConsumerMaxConcurrency,
    commitEveryMs: s.commitEveryMs,
    storedFormat: s.storedFormat,
    stateDir: join(bench.stateRoot, name),
  };
  const settled = await settle(s.settleLoad, SETTLE_MAX_MS);
  const phase = bench.progress.phase(name, totalOf(input.ends), 'events');
  const copies = contender === 'orderly' ? s.orderlyWorkers : 1;
  const figures = await runContender(spec, javaCommand(bench, contender), phase, TIMEOUT_MS, copies);
  const measured = `${copies > 1 ? `${copies} processes: ` : ''}${figures.eventsPerSec} events/s, ${figures.cpuMicrosPerEvent} µs CPU/event, peak RSS ${figures.peakRssMb} MiB, load ${settled.startLoadAverage} at the start (after ${Math.round(settled.settledMs / 1_000)} s of settling), ${figures.loadAverage} at the end`;
  if (contender === 'raw') {
    phase.finish(measured);
    return { ...figures, ...settled };
  }
  const summary = checkOutput(contender, output, input.expected, await readTopic(bench.bootstrap, output));
  phase.finish(`${measured}; output checked (${summary.records} records, ${summary.duplicates} duplicates)`);
  return { ...figures, ...settled, output: summary };
}

/** Both runs: every contender over the input, then the three that work over the slow input. */
async function runAll(bench: Bench): Promise<Pick<PeersReport['details'], 'fast' | 'slow' | 'prefillSeconds'>> {
  const s = bench.settings;
  const t0 = performance.now();
  const input = await prefillInput(bench, 'input', s.events);
  const t1 = performance.now();
  const slowInput = await prefillInput(bench, 'slow', s.slowEvents);
  const prefillSeconds = { input: Math.round((t1 - t0) / 100) / 10, slow: Math.round((performance.now() - t1) / 100) / 10 };
  const fast: Partial<Record<Contender, ContenderRun>> = {};
  for (const c of s.contenders) fast[c] = await measure(bench, c, input, 0);
  const slow: Partial<Record<Contender, ContenderRun>> = {};
  for (const c of s.contenders) if ((WORKERS as readonly Contender[]).includes(c)) slow[c] = await measure(bench, c, slowInput, s.slowWaitMs);
  return { fast, slow, prefillSeconds };
}

async function main(argv: string[]): Promise<void> {
  const options = parse(argv);
  if (options.help) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  const started = performance.now();
  const machine = describeMachine();
  const s = options.settings;
  const log = (line: string) => process.stderr.write(`bench:peers: ${line}\n`);
  const needsJava = s.contenders.some((c) => c in JAVA_MODULES);
  const java = needsJava ? { java: findJava(), buildDir: ensureJavaBuild(log) } : undefined;
  const broker = await peersBroker({ bootstrap: options.bootstrap, port: options.port });
  const interrupt = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping the contenders${broker.started ? ' and the broker' : ''}`);
    killContenders();
    void broker.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const stateRoot = await mkdtemp(join(tmpdir(), 'orderly-bench-peers-'));
  const bench: Bench = {
    run: `orderly-peers-${Date.now()}`,
    settings: s,
    bootstrap: broker.bootstrap,
    stateRoot,
    java,
    progress: progressOnStderr(),
    topics: [],
  };
  try {
    const { fast, slow, prefillSeconds } = await runAll(bench);
    const report: PeersReport = {
      date: new Date().toISOString(),
      machine,
      settings: { ...s, broker: broker.description },
      ...headlineFigures(fast, slow),
      details: { fast, slow, prefillSeconds, totalSeconds: Math.round((performance.now() - started) / 1_000) },
    };
    process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatPeersTable(report));
  } finally {
    await rm(stateRoot, { recursive: true, force: true });
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    if (broker.started) await broker.stop();
    else await deleteTopics(broker.bootstrap, bench.topics).catch(() => undefined);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
