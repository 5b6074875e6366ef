import type { Machine } from '../machine.js';
import type { OutputSummary } from './checkOutput.js';
import type { ContenderFigures } from './launch.js';
import type { Settled } from './settle.js';
import { CONTENDERS, WORKERS, type Contender } from './spec.js';

/** What a run was asked to do, and how each contender was set up. */
export interface PeersSettings {
  readonly events: number;
  readonly keys: number;
  readonly partitions: number;
  readonly slowEvents: number;
  readonly slowWaitMs: number;
  /** orderly's maxInFlight per partition. */
  readonly maxInFlight: number;
  /** Parallel Consumer's maxConcurrency (worker threads). */
  readonly parallelConsumerMaxConcurrency: number;
  readonly commitEveryMs: number;
  /** orderly's stored format (--stored-format; the runner's default, 4). */
  readonly storedFormat: 2 | 4;
  readonly jvmOptions: string;
  readonly contenders: readonly Contender[];
  /** orderly's worker processes in its one group (--orderly-workers), as Kafka Streams' `num.stream.threads` would be threads; its figures are their sums. */
  readonly orderlyWorkers: number;
  /** Each contender starts once the 1-minute load average is at most this (0: at once), waiting at most 3 minutes. */
  readonly settleLoad: number;
  /** `started …` when the benchmark ran its own broker, else the bootstrap it was given. */
  readonly broker: string;
}

/** One contender's run: its figures and, for the three that write, what its output held. */
export interface ContenderRun extends ContenderFigures, Settled {
  readonly output?: OutputSummary;
}

type Figure = 'EventsPerSec' | 'CpuMicrosPerEvent' | 'PeakRssMb';

/** Everything `npm run -s bench:peers -- --json` prints: `<c>EventsPerSec`, `<c>CpuMicrosPerEvent`, `<c>PeakRssMb`, `<c>SlowEventsPerSec`. */
export type PeersReport = {
  readonly date: string;
  readonly machine: Machine;
  readonly settings: PeersSettings;
  readonly details: {
    readonly fast: Partial<Record<Contender, ContenderRun>>;
    readonly slow: Partial<Record<Contender, ContenderRun>>;
    readonly prefillSeconds: Readonly<Record<string, number>>;
    readonly totalSeconds: number;
  };
} & Partial<Record<`${Contender}${Figure}` | `${(typeof WORKERS)[number]}SlowEventsPerSec`, number>>;

/** The flat figures of the runs that took place. */
export function headlineFigures(fast: PeersReport['details']['fast'], slow: PeersReport['details']['slow']): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of CONTENDERS) {
    const run = fast[c];
    if (!run) continue;
    out[`${c}EventsPerSec`] = run.eventsPerSec;
    out[`${c}CpuMicrosPerEvent`] = run.cpuMicrosPerEvent;
    out[`${c}PeakRssMb`] = run.peakRssMb;
  }
  for (const c of WORKERS) {
    const run = slow[c];
    if (run) out[`${c}SlowEventsPerSec`] = run.eventsPerSec;
  }
  return out;
}

const NAMES: Record<Contender, string> = { raw: 'raw consumer', kafkaStreams: 'Kafka Streams', parallelConsumer: 'Parallel Consumer', orderly: 'orderly' };

/** The human-readable form: one row per contender. */
export function formatPeersTable(report: PeersReport): string {
  const s = report.settings;
  const cell = (n: number | undefined) => (n === undefined ? '-' : n.toLocaleString('en-US')).padStart(12);
  const lines = [
    `peers benchmark: ${s.events.toLocaleString('en-US')} events on ${s.keys.toLocaleString('en-US')} keys, ${s.partitions} partitions; slow: ${s.slowEvents.toLocaleString('en-US')} events, ${s.slowWaitMs} ms wait each`,
    `machine: ${report.machine.cores} cores, ${report.machine.memoryGiB} GiB, load ${report.machine.loadAverage.join(' ')}; broker ${s.broker}`,
    '',
    `${'contender'.padEnd(20)}${'events/s'.padStart(12)}${'CPU µs/evt'.padStart(12)}${'peak RSS MiB'.padStart(14)}${'slow ev/s'.padStart(12)}${'load at start'.padStart(15)}`,
  ];
  for (const c of s.contenders) {
    const fast = report.details.fast[c];
    const slow = report.details.slow[c];
    lines.push(
      `${NAMES[c].padEnd(20)}${cell(fast?.eventsPerSec)}${cell(fast?.cpuMicrosPerEvent)}${cell(fast?.peakRssMb).padStart(14)}${cell(slow?.eventsPerSec)}${cell(fast?.startLoadAverage).padStart(15)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
