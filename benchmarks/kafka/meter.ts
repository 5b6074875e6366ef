import { threadCpuMs, threadTicks } from './threads.js';
import type { VariantMessage, VariantResult } from './spec.js';

/** Sends a message to the benchmark process (the variant runs as its child). */
export function send(message: VariantMessage): void {
  process.send?.(message);
}

const cpuMsOf = (usage: NodeJS.CpuUsage): number => (usage.user + usage.system) / 1_000;

const mb = (bytes: number): number => Math.round(bytes / 2 ** 20);

function memoryMb(): VariantResult['memory'] {
  const m = process.memoryUsage();
  return { rss: mb(m.rss), heapTotal: mb(m.heapTotal), heapUsed: mb(m.heapUsed), external: mb(m.external), arrayBuffers: mb(m.arrayBuffers) };
}

/** Times a variant from its first record, and reports its progress every half second. */
export class Meter {
  private firstAt: number | undefined;
  private firstCpu: NodeJS.CpuUsage | undefined;
  private firstTicks = threadTicks();
  private readonly ticker: NodeJS.Timeout;

  constructor(private readonly done: () => number) {
    this.ticker = setInterval(() => send({ type: 'progress', done: this.done() }), 500);
  }

  /** The first record arrived (later calls do nothing). */
  first(): void {
    if (this.firstAt !== undefined) return;
    this.firstAt = performance.now();
    this.firstCpu = process.cpuUsage();
    this.firstTicks = threadTicks();
    send({ type: 'first' });
  }

  get started(): boolean {
    return this.firstAt !== undefined;
  }

  /** Milliseconds since the first record. */
  elapsedMs(): number {
    return this.firstAt === undefined ? 0 : performance.now() - this.firstAt;
  }

  /** The end point is reached: the figures from the first record until now. */
  end(extra: Partial<VariantResult> = {}): VariantResult {
    clearInterval(this.ticker);
    send({ type: 'progress', done: this.done() });
    return {
      events: this.done(),
      wallMs: Math.round(this.elapsedMs()),
      cpuMs: Math.round(cpuMsOf(process.cpuUsage())),
      measuredCpuMs: Math.round(cpuMsOf(process.cpuUsage(this.firstCpu))),
      memory: memoryMb(),
      threadCpuMs: threadCpuMs(this.firstTicks, threadTicks()),
      ...extra,
    };
  }
}
