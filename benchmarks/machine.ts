import { readFileSync } from 'node:fs';
import os from 'node:os';

/** The machine a run measured, read at run time. */
export interface Machine {
  readonly cpuModel: string;
  /** Logical cores the process may use. */
  readonly cores: number;
  /** The clock the kernel reports, when it reports one (0 otherwise). */
  readonly cpuMHz: number;
  readonly memoryGiB: number;
  readonly node: string;
  /** The distribution (from /etc/os-release when there is one), kernel and architecture. */
  readonly os: string;
  /** 1, 5 and 15 minute load averages when the run started: other work on the machine skews wall-clock figures. */
  readonly loadAverage: readonly number[];
}

/** Describes this machine: CPU, cores, memory, Node, OS and its load. */
export function describeMachine(): Machine {
  const cpu = os.cpus()[0];
  return {
    cpuModel: cpu?.model.trim() ?? 'unknown',
    cores: os.availableParallelism(),
    cpuMHz: cpu?.speed || cpuinfoMHz(),
    memoryGiB: round1(os.totalmem() / 2 ** 30),
    node: process.version,
    os: `${distribution() ?? os.type()} (${os.type()} ${os.release()}, ${os.arch()})`,
    loadAverage: os.loadavg().map(round1),
  };
}

const round1 = (n: number): number => Math.round(n * 10) / 10;

/** Reads a Linux file, or undefined where there is none. */
function readOptional(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function cpuinfoMHz(): number {
  const mhz = /^cpu MHz\s*:\s*([\d.]+)/m.exec(readOptional('/proc/cpuinfo') ?? '')?.[1];
  return mhz ? Math.round(Number(mhz)) : 0;
}

function distribution(): string | undefined {
  return /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readOptional('/etc/os-release') ?? '')?.[1];
}
