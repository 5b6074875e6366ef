import type { Machine } from '../machine.js';
import type { Goal } from '../report.js';
import type { MeasuredVariant } from './child.js';
import type { RestoreResult } from './restore.js';
import type { SoakDetails, SoakFigures } from './soak.js';

/** What a run was asked to do. */
export interface KafkaBenchSettings {
  readonly events: number;
  readonly partitions: number;
  readonly keys: number;
  /** Events the serial worker handles (instant decide): its rate is flat, so a prefix measures it. */
  readonly serialEvents: number;
  /** The first events of the input, in a topic of their own, for the 5 ms runs. */
  readonly slowEvents: number;
  readonly slowDecideMs: number;
  readonly backlogEvents: number;
  readonly backlogDecideMs: number;
  readonly backlogHoldMs: number;
  readonly maxInFlight: number;
  readonly commitEveryMs: number;
  /** Events per partition (one state key each) in the changelogs the restarting worker restores (--restore-keys). */
  readonly restoreKeysPerPartition: number;
  /** orderly's maxBufferedPerPartition when given (--max-buffered); else the Kafka runner's default, 1500. */
  readonly maxBuffered?: number;
  /** orderly's stored format when given (--stored-format); else the runner's default, 4. */
  readonly storedFormat?: 2 | 4;
  /** librdkafka properties given to orderly's consumer over its defaults (--consumer-config). */
  readonly consumerConfig: Readonly<Record<string, string>>;
  /** librdkafka properties given to orderly's producer over its defaults (--producer-config). */
  readonly producerConfig: Readonly<Record<string, string>>;
  /** `started` when the benchmark ran its own broker, else the bootstrap it was given. */
  readonly broker: string;
}

/** The headline figures. */
export interface KafkaFigures {
  readonly rawEventsPerSec: number;
  readonly serialEventsPerSec: number;
  readonly orderlyEventsPerSec: number;
  readonly serialSlowEventsPerSec: number;
  readonly orderlySlowEventsPerSec: number;
  /** Peak VmRSS of the orderly worker over its two timed runs, MiB. */
  readonly peakRssMb: number;
  /** Peak VmRSS of the orderly worker while the backlog waits, MiB. */
  readonly backlogRssMb: number;
  /** A worker restarting on an empty state directory: from its assignment until each of its 12 partitions has processed an event, ms. */
  readonly restoreMsFor12Partitions: number;
}

/** Everything `npm run -s bench:kafka -- --json` prints. */
export interface KafkaBenchReport extends KafkaFigures, Partial<SoakFigures> {
  readonly date: string;
  readonly machine: Machine;
  readonly settings: KafkaBenchSettings;
  readonly goals: Readonly<Record<string, Goal & { readonly ratio?: number }>>;
  readonly details: {
    /** The soak's measures (absent with --no-soak). */
    readonly soak?: SoakDetails;
    readonly raw: MeasuredVariant;
    readonly serial: MeasuredVariant;
    readonly orderly: MeasuredVariant;
    readonly serialSlow: MeasuredVariant;
    readonly orderlySlow: MeasuredVariant;
    readonly backlog: MeasuredVariant;
    readonly restore: RestoreResult;
    /** Seconds each prefill took (not timed in any figure). */
    readonly prefillSeconds: Readonly<Record<string, number>>;
    readonly totalSeconds: number;
  };
}

/** The goals of issue 3 §9, checked against a run's figures. */
export function kafkaGoals(f: KafkaFigures): Record<string, Goal & { ratio: number }> {
  const vsRaw = round2(f.orderlyEventsPerSec / f.rawEventsPerSec);
  const vsSerial = round2(f.orderlySlowEventsPerSec / f.serialSlowEventsPerSec);
  return {
    orderlyVsRaw: { goal: 'orderly >= 0.5 x raw', ratio: vsRaw, met: vsRaw >= 0.5 },
    slowOrderlyVsSerial: { goal: 'orderly >= 50 x serial (5 ms decide)', ratio: vsSerial, met: vsSerial >= 50 },
    backlogRssMb: { goal: '<= 300 MiB', ratio: round2(f.backlogRssMb / 300), met: f.backlogRssMb <= 300 },
    restoreMsFor12Partitions: { goal: '<= 2000 ms', ratio: round2(f.restoreMsFor12Partitions / 2_000), met: f.restoreMsFor12Partitions <= 2_000 },
  };
}

const round2 = (n: number): number => Math.round(n * 100) / 100;
const int = (n: number): string => Math.round(n).toLocaleString('en-US');

/** The report as a readable table, for a terminal. */
export function formatKafkaTable(r: KafkaBenchReport): string {
  const { machine: m, goals: g, details: d, settings: s } = r;
  const row = (name: string, value: string, goal?: Goal & { ratio?: number }) =>
    `${name.padEnd(34)}${value.padStart(12)}   ${goal ? `${goal.goal} (${goal.ratio})`.padEnd(42) : ''.padEnd(42)}${goal ? (goal.met ? 'met' : 'NOT met') : ''}`;
  const cpu = (v: MeasuredVariant) =>
    `${int(v.events)} events, ${(v.wallMs / 1_000).toFixed(1)} s wall, ${(v.measuredCpuMs / 1_000).toFixed(1)} s CPU (${int(v.eventsPerCpuSec)} events per CPU second), peak RSS ${v.peakRssMb} MiB`;
  return [
    `orderly Kafka benchmark, ${r.date}`,
    `${m.cpuModel}, ${m.cores} cores${m.cpuMHz ? ` at ${m.cpuMHz} MHz` : ''}, ${m.memoryGiB} GiB, Node ${m.node}, ${m.os}, load ${m.loadAverage.join(' ')}`,
    `${int(s.events)} events, ${s.partitions} partitions, ${int(s.keys)} keys; maxInFlight ${s.maxInFlight}, commit every ${s.commitEveryMs} ms; broker ${s.broker}`,
    '',
    row('raw events/s', int(r.rawEventsPerSec)),
    row('serial events/s', int(r.serialEventsPerSec)),
    row('orderly events/s', int(r.orderlyEventsPerSec), g.orderlyVsRaw),
    row(`serial events/s (${s.slowDecideMs} ms decide)`, int(r.serialSlowEventsPerSec)),
    row(`orderly events/s (${s.slowDecideMs} ms decide)`, int(r.orderlySlowEventsPerSec), g.slowOrderlyVsSerial),
    row('orderly peak RSS (MiB)', String(r.peakRssMb)),
    row(`RSS, ${int(s.backlogEvents)} backlog (MiB)`, String(r.backlogRssMb), g.backlogRssMb),
    row('restore, 12 partitions (ms)', int(r.restoreMsFor12Partitions), g.restoreMsFor12Partitions),
    '',
    `raw: ${cpu(d.raw)}`,
    `serial: ${cpu(d.serial)}`,
    `orderly: ${cpu(d.orderly)}; last event finished at ${((d.orderly.lastFinishedMs ?? 0) / 1_000).toFixed(1)} s`,
    `serial, ${s.slowDecideMs} ms: ${cpu(d.serialSlow)}`,
    `orderly, ${s.slowDecideMs} ms: ${cpu(d.orderlySlow)}; last event finished at ${((d.orderlySlow.lastFinishedMs ?? 0) / 1_000).toFixed(1)} s`,
    `backlog: ${int(d.backlog.received ?? 0)} of ${int(s.backlogEvents)} received and ${int(d.backlog.events)} finished in ${(d.backlog.wallMs / 1_000).toFixed(1)} s ` +
      `(decide ${s.backlogDecideMs} ms); peak RSS ${d.backlog.runRssMb} MiB while reading it; at the end RSS ${d.backlog.memory.rss} MiB, ` +
      `V8 heap ${d.backlog.memory.heapUsed} used of ${d.backlog.memory.heapTotal}, ${d.backlog.memory.external} external`,
    `prefill: ${Object.entries(d.prefillSeconds)
      .map(([k, v]) => `${k} ${v} s`)
      .join(', ')}; whole run ${d.totalSeconds} s`,
    '',
  ].join('\n');
}
