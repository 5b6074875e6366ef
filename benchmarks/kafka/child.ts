import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Phase } from '../progress.js';
import { RssSampler } from './rss.js';
import type { ParentMessage, VariantMessage, VariantResult, VariantSpec } from './spec.js';

const VARIANT = fileURLToPath(new URL('./variant.ts', import.meta.url));
/** More Node flags for the variants, e.g. `--cpu-prof --cpu-prof-dir=/tmp/orderly-prof` to profile them. */
const EXTRA_ARGS = (process.env.ORDERLY_BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);

const running = new Set<ChildProcess>();

/** Kills the variants still running (the benchmark was interrupted). */
export function killVariants(): void {
  for (const child of running) child.kill('SIGKILL');
}

/** A variant's result with the memory of its process, sampled from outside. */
export interface MeasuredVariant extends VariantResult {
  /** Peak VmRSS of the child over its whole life, MiB. */
  readonly peakRssMb: number;
  /** Peak VmRSS from the first record on, MiB. */
  readonly runRssMb: number;
  /** Events per wall-clock second, first record to end point. */
  readonly eventsPerSec: number;
  /** Events per CPU second of the process (every thread: librdkafka's and LevelDB's too) over the same span; less skewed by other load. */
  readonly eventsPerCpuSec: number;
}

/**
 * Runs one variant in a child process (Node with tsx), samples its VmRSS every 100 ms, forwards
 * its output to stderr and its progress to `phase`; resolves with its result. `onMark` hears each
 * mark the child passes (VariantSpec.marks), with a way to tell the child something.
 */
export function runVariant(
  spec: VariantSpec,
  phase: Phase,
  timeoutMs: number,
  onMark?: (mark: number, tell: (message: ParentMessage) => void) => void,
): Promise<MeasuredVariant> {
  return new Promise((resolve, reject) => {
    const child = fork(VARIANT, [JSON.stringify(spec)], { execArgv: ['--import', 'tsx', ...EXTRA_ARGS], stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    running.add(child);
    child.stdout!.pipe(process.stderr, { end: false });
    child.stderr!.pipe(process.stderr, { end: false });
    const sampler = new RssSampler(child.pid!);
    let result: VariantResult | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`bench: the ${spec.kind} variant on ${spec.topic} did not finish within ${timeoutMs / 1_000} s`));
    }, timeoutMs);
    child.on('message', (message: VariantMessage) => {
      if (message.type === 'progress') phase.update(message.done);
      else if (message.type === 'first') sampler.mark();
      else if (message.type === 'mark') onMark?.(message.mark, (m) => child.send(m));
      else result = message.result;
    });
    child.on('exit', (code, signal) => {
      running.delete(child);
      clearTimeout(timer);
      const rss = sampler.stop();
      if (result && code === 0) {
        resolve({
          ...result,
          peakRssMb: rss.peakMb,
          runRssMb: rss.peakSinceMarkMb,
          eventsPerSec: Math.round((result.events / result.wallMs) * 1_000),
          eventsPerCpuSec: Math.round((result.events / result.measuredCpuMs) * 1_000),
        });
      } else reject(new Error(`bench: the ${spec.kind} variant on ${spec.topic} exited with ${signal ?? `code ${code}`} before its result`));
    });
  });
}
