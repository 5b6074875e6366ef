import { readFileSync } from 'node:fs';

/** A process's resident memory now, in MiB, from /proc/<pid>/status (VmRSS); undefined once it is gone. */
export function rssMb(pid: number): number | undefined {
  try {
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** Samples a process's VmRSS on an interval; keeps the peak, and the peak since {@link RssSampler.mark}. */
export class RssSampler {
  private readonly timer: NodeJS.Timeout;
  private peak = 0;
  private peakSinceMark = 0;
  private marked = false;
  samples = 0;

  constructor(
    private readonly pid: number,
    everyMs = 100,
  ) {
    this.timer = setInterval(() => this.sample(), everyMs);
    this.sample();
  }

  /** From now on, also track the peak separately (e.g. once the backlog is being read). */
  mark(): void {
    this.marked = true;
    this.peakSinceMark = 0;
  }

  sample(): void {
    const mb = rssMb(this.pid);
    if (mb === undefined) return;
    this.samples += 1;
    this.peak = Math.max(this.peak, mb);
    if (this.marked) this.peakSinceMark = Math.max(this.peakSinceMark, mb);
  }

  stop(): { peakMb: number; peakSinceMarkMb: number } {
    clearInterval(this.timer);
    return { peakMb: round1(this.peak), peakSinceMarkMb: round1(this.peakSinceMark) };
  }
}

export const round1 = (n: number): number => Math.round(n * 10) / 10;
