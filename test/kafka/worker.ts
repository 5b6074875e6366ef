// `./bin/orderly run` as a child process, with its JSON log lines collected.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** The disputes example as `npm run build` compiles it (the Kafka tests' global set-up builds). */
export const DISPUTES_MODULE = 'dist/examples/disputes/topology.js';

/**
 * Runs `./bin/orderly ARGS` to its end; one still running after `timeoutMs` is killed (its
 * status is then null, which a test expecting an exit code fails on).
 */
export function runOrderly(args: readonly string[], timeoutMs = 10_000): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, ['bin/orderly', ...args], { cwd: REPO, encoding: 'utf8', timeout: timeoutMs, killSignal: 'SIGKILL' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

export interface WorkerOptions {
  readonly bootstrap: string;
  readonly group: string;
  readonly stateDir: string;
  readonly topicPrefix: string;
  readonly env?: Record<string, string>;
  readonly args?: readonly string[];
  /** A topology module run from source (through tsx) instead of the compiled disputes example. */
  readonly sourceModule?: string;
  /**
   * The checkout whose `bin/orderly` and `dist/` run, and the directory the module paths are
   * relative to: this repository by default; a build of another commit from `buildOfCommit`
   * (commitBuild.ts) runs that commit's code.
   */
  readonly root?: string;
}

/** One parsed pino line of the worker. */
export type LogLine = Record<string, unknown> & { msg?: string; level?: number };

export class Worker {
  readonly lines: LogLine[] = [];
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  private stderr = '';

  constructor(options: WorkerOptions) {
    const args = [
      ...(options.sourceModule ? ['--import', 'tsx'] : []),
      'bin/orderly',
      'run',
      options.sourceModule ?? DISPUTES_MODULE,
      '--bootstrap',
      options.bootstrap,
      '--group',
      options.group,
      '--state-dir',
      options.stateDir,
      '--session-timeout-ms',
      '6000',
      '--commit-every-ms',
      '500',
      '--log-level',
      'debug',
      ...(options.args ?? []),
    ];
    this.child = spawn(process.execPath, args, {
      cwd: options.root ?? REPO,
      env: {
        ...process.env,
        ORDERLY_TOPIC_PREFIX: options.topicPrefix,
        ORDERLY_MODEL_LATENCY_MS: '20',
        ORDERLY_RETRY_DELAY_MS: '100',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let partial = '';
    this.child.stdout!.on('data', (chunk: Buffer) => {
      partial += chunk.toString();
      const parts = partial.split('\n');
      partial = parts.pop()!;
      for (const line of parts) {
        if (!line.trim()) continue;
        try {
          this.lines.push(JSON.parse(line) as LogLine);
        } catch {
          this.lines.push({ msg: line });
        }
      }
    });
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exited = once(this.child, 'exit').then(([code]) => code as number | null);
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Outcome lines (`event APPLIED`, ...) of this worker. */
  outcomes(outcome?: string): LogLine[] {
    return this.lines.filter((l) => typeof l.outcome === 'string' && (outcome === undefined || l.outcome === outcome));
  }

  /** Waits until `predicate` holds of the lines; fails early when the worker exits. */
  async waitFor(what: string, predicate: (lines: readonly LogLine[]) => boolean, timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.lines)) {
      if (!this.running) throw new Error(`worker exited (code ${this.child.exitCode}) before ${what}\n${this.tail()}`);
      if (Date.now() > deadline) throw new Error(`worker: no ${what} within ${timeoutMs} ms\n${this.stuck()}`);
      await sleep(100);
    }
  }

  /** SIGTERM, then the exit code (a clean stop is 0). */
  async stop(timeoutMs = 60_000): Promise<number | null> {
    if (this.running) this.child.kill('SIGTERM');
    const code = await Promise.race([this.exited, sleep(timeoutMs).then(() => 'timeout' as const)]);
    if (code === 'timeout') {
      this.child.kill('SIGKILL');
      throw new Error(`worker did not stop within ${timeoutMs} ms of SIGTERM\n${this.tail()}`);
    }
    return code;
  }

  /** Waits for the worker to exit by itself (no signal sent), and returns its exit code; throws after `timeoutMs`. */
  async exit(timeoutMs: number): Promise<number | null> {
    const timer = new AbortController();
    try {
      const code = await Promise.race([this.exited, sleep(timeoutMs, 'timeout' as const, { signal: timer.signal })]);
      if (code === 'timeout') throw new Error(`worker did not exit within ${timeoutMs} ms\n${this.tail()}`);
      return code;
    } finally {
      timer.abort();
    }
  }

  /** kill -9: no cleanup at all, as a crash. */
  async kill(): Promise<void> {
    if (this.running) this.child.kill('SIGKILL');
    await this.exited;
  }

  /** What the worker wrote on stderr so far. */
  get errors(): string {
    return this.stderr;
  }

  /** The last log lines and stderr, for failure messages. */
  tail(count = 25): string {
    const lines = this.lines.slice(-count).map((l) => JSON.stringify(l));
    return `--- last ${lines.length} log lines:\n${lines.join('\n')}\n--- stderr:\n${this.stderr.slice(-3000)}`;
  }

  /**
   * For a wait that timed out: the {@link diagnosis} first (CI keeps only a failure's first lines),
   * then the tail. Not for a message built whether or not the check fails: gdb stops the worker a moment.
   */
  stuck(count = 25): string {
    return `${this.diagnosis()}\n${this.tail(count)}`;
  }

  /**
   * Two lines on where a worker stands: how long ago it last logged, its last lines that are not
   * event outcomes, and what its main thread waits on (the kernel's wait channel: \`do_epoll_wait\`
   * is an idle event loop, a futex wait is a native call blocking it; with gdb installed, the
   * thread's native frames too).
   */
  diagnosis(): string {
    const last = this.lines.at(-1);
    const ageS = typeof last?.time === 'number' ? `${Math.round((Date.now() - last.time) / 1_000)} s ago` : 'never';
    const notOutcomes = this.lines
      .filter((l) => typeof l.outcome !== 'string')
      .slice(-4)
      .map((l) => String(l.msg).slice(0, 120));
    const head = `--- worker ${this.child.pid}: ${this.running ? 'running' : `exited (${this.child.exitCode ?? this.child.signalCode})`}, last log line ${ageS}; last lines other than outcomes: ${notOutcomes.join(' | ')}`;
    if (!this.running) return head;
    return `${head}\n--- its main thread waits in ${mainThreadWait(this.child.pid!)}`;
  }
}

/** The kernel wait channel of a process's main thread, and its native frames when gdb is installed. */
function mainThreadWait(pid: number): string {
  let wchan = 'unknown';
  try {
    wchan = readFileSync(`/proc/${pid}/wchan`, 'utf8') || 'running';
  } catch {
    // Not Linux, or the process is gone.
  }
  const gdb = spawnSync('gdb', ['-p', String(pid), '-batch', '-ex', 'thread 1', '-ex', 'bt 14'], { encoding: 'utf8', timeout: 20_000 });
  if (gdb.error || gdb.status !== 0) return wchan;
  const frames = [...gdb.stdout.matchAll(/^#\d+\s+(?:0x[0-9a-f]+ in )?([\w:~<>]+)/gm)].map((m) => m[1]);
  return `${wchan}; frames: ${frames.join(' < ')}`;
}
