import rdkafka from '@confluentinc/kafka-javascript';
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Phase } from '../progress.js';
import { totalOf } from '../kafka/events.js';
import { RssSampler, round1 } from '../kafka/rss.js';
import { processCpuMs } from './processCpu.js';
import type { ContenderMessage, ContenderSpec } from './spec.js';

const NODE_CONTENDER = fileURLToPath(new URL('./nodeContender.ts', import.meta.url));
/** More Node flags for the Node contenders, e.g. `--cpu-prof --cpu-prof-dir=/tmp/orderly-prof` to profile them (as bench:kafka's variants). */
const EXTRA_ARGS = (process.env.ORDERLY_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
const POLL_MS = 100;

/** How to start a Java contender: its `java` and class path; Node contenders need nothing. */
export interface JavaCommand {
  readonly java: string;
  readonly classpath: string;
  readonly mainClass: string;
  readonly jvmOptions: readonly string[];
}

/** One contender's figures, measured from outside its process. */
export interface ContenderFigures {
  readonly events: number;
  /** From its first event to its group's commits reaching every end offset. */
  readonly wallMs: number;
  /** User + system CPU of its process (every thread) over the same span. */
  readonly cpuMs: number;
  readonly eventsPerSec: number;
  readonly cpuMicrosPerEvent: number;
  /** Peak VmRSS of its process over its whole life, MiB. */
  readonly peakRssMb: number;
  /** The machine's 1-minute load average at the end of the span: on a shared machine, what else ran. */
  readonly loadAverage: number;
}

const running = new Set<ChildProcess>();

/** Kills the contenders still running (the benchmark was interrupted). */
export function killContenders(): void {
  for (const child of running) child.kill('SIGKILL');
}

function start(spec: ContenderSpec, java: JavaCommand | undefined): ChildProcess {
  if (!java) return fork(NODE_CONTENDER, [JSON.stringify(spec)], { execArgv: ['--import', 'tsx', ...EXTRA_ARGS], stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  const args = ['--bootstrap', spec.bootstrap, '--input', spec.input, '--output', spec.output, '--group', spec.group, '--state-dir', spec.stateDir];
  const numbers = ['--wait-ms', spec.waitMs, '--concurrency', spec.concurrency, '--commit-every-ms', spec.commitEveryMs].map(String);
  return spawn(java.java, [...java.jvmOptions, '-cp', java.classpath, java.mainClass, ...args, ...numbers], { stdio: ['ignore', 'pipe', 'pipe'] });
}

type Admin = ReturnType<InstanceType<typeof rdkafka.KafkaJS.Kafka>['admin']>;

/** The sum of the group's committed offsets on the input, each capped at its end offset, and whether all reached it. */
async function committedProgress(admin: Admin, spec: ContenderSpec): Promise<{ done: number; atEnd: boolean }> {
  const [topic] = await admin.fetchOffsets({ groupId: spec.group, topics: [spec.input] });
  const committed = new Map((topic?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
  let done = 0;
  let atEnd = true;
  spec.ends.forEach((end, partition) => {
    const offset = Math.max(0, committed.get(partition) ?? 0);
    done += Math.min(offset, end);
    if (offset < end) atEnd = false;
  });
  return { done, atEnd };
}

/** What the parent hears of a running contender: its first event, its stderr, its exit. */
class Watched {
  exitedWith: string | undefined;
  stderrTail = '';
  readonly exit: Promise<void>;
  readonly rss: RssSampler;

  constructor(
    readonly child: ChildProcess,
    private readonly markFirst: () => void,
  ) {
    running.add(child);
    this.rss = new RssSampler(child.pid!);
    child.stderr!.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-4_000);
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      if (/^first$/m.test(chunk.toString())) this.markFirst();
    });
    child.on('message', (message: ContenderMessage) => {
      if (message.type === 'first') this.markFirst();
    });
    this.exit = new Promise<void>((resolve) =>
      child.on('exit', (code, signal) => {
        this.exitedWith = signal ?? `code ${code}`;
        running.delete(child);
        resolve();
      }),
    );
  }

  /** SIGTERM, SIGKILL after 20 s; resolves once it has exited. */
  async stop(): Promise<void> {
    this.rss.stop();
    if (this.exitedWith) return;
    this.child.kill('SIGTERM');
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 20_000);
    await this.exit;
    clearTimeout(killer);
  }
}

/**
 * Runs one contender in its own process (or `copies` processes in its one group, each with a state
 * directory of its own) until its group's committed offsets reach every end offset of the input,
 * then stops it. The span measured starts at its first event (`first` on a Java contender's
 * stdout, `{ type: 'first' }` from a Node one; the first of any copy) and ends when the parent sees
 * the commits at the end, polled every 100 ms; its CPU (of every copy) is read from /proc at both
 * ends, its RSS sampled every 100 ms (the copies' peaks summed). Rejects when a process exits
 * first or takes longer than `timeoutMs`.
 */
export async function runContender(spec: ContenderSpec, java: JavaCommand | undefined, phase: Phase, timeoutMs: number, copies = 1): Promise<ContenderFigures> {
  const name = `${spec.contender}${spec.waitMs > 0 ? ' (slow)' : ''}`;
  let first: { readonly atMs: number; readonly cpuMs: number } | undefined;
  const cpuOfAll = (): number | undefined =>
    watched.reduce<number | undefined>((sum, w) => (sum === undefined ? undefined : addCpu(sum, processCpuMs(w.child.pid!))), 0);
  const markFirst = (): void => void (first ??= { atMs: performance.now(), cpuMs: cpuOfAll() ?? 0 });
  const watched: Watched[] = [];
  for (let i = 0; i < copies; i++) watched.push(new Watched(start(copies === 1 ? spec : { ...spec, stateDir: `${spec.stateDir}-${i}` }, java), markFirst));
  const admin = new rdkafka.KafkaJS.Kafka({ kafkaJS: { brokers: [spec.bootstrap], logLevel: rdkafka.KafkaJS.logLevel.NOTHING } }).admin();
  await admin.connect();
  const deadline = performance.now() + timeoutMs;
  try {
    for (;;) {
      const exited = watched.find((w) => w.exitedWith);
      if (exited)
        throw new Error(`bench:peers: ${name} exited with ${exited.exitedWith} before its commits reached the end of ${spec.input}\n${exited.stderrTail}`);
      if (performance.now() > deadline) throw new Error(`bench:peers: ${name} did not commit the end of ${spec.input} within ${timeoutMs / 1_000} s`);
      const progress = await committedProgress(admin, spec);
      phase.update(progress.done);
      if (progress.atEnd && first) break;
      await sleep(POLL_MS);
    }
    const endAtMs = performance.now();
    const endCpuMs = cpuOfAll();
    if (endCpuMs === undefined) throw new Error(`bench:peers: ${name} was gone when its CPU time was to be read`);
    const peakRssMb = round1(watched.reduce((sum, w) => sum + w.rss.stop().peakMb, 0));
    return figures(totalOf(spec.ends), endAtMs - first.atMs, endCpuMs - first.cpuMs, peakRssMb);
  } finally {
    await admin.disconnect();
    await Promise.all(watched.map((w) => w.stop()));
  }
}

function addCpu(sum: number, cpuMs: number | undefined): number | undefined {
  return cpuMs === undefined ? undefined : sum + cpuMs;
}

function figures(events: number, wallMs: number, cpuMs: number, peakRssMb: number): ContenderFigures {
  return {
    events,
    wallMs: Math.round(wallMs),
    cpuMs: Math.round(cpuMs),
    eventsPerSec: Math.round((events / wallMs) * 1_000),
    cpuMicrosPerEvent: round1((cpuMs * 1_000) / events),
    peakRssMb,
    loadAverage: round1(loadavg()[0]!),
  };
}
