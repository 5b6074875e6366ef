import type { CrashSchedules, SchedulesByMode } from './crashSchedules.js';
import type { EngineThroughput } from './engineThroughput.js';
import type { LevelDbFloor } from './levelDbFloor.js';
import type { Machine } from './machine.js';
import type { WindowUtilization } from './windowUtilization.js';

/** The headline figures of a run. */
export interface Figures {
  readonly engineEventsPerSec: number;
  /** The LevelDB work of the engine benchmark's events with no engine: one lookup and one batch per event. */
  readonly levelDbFloorEventsPerSec: number;
  /** `engineEventsPerSec` ÷ `levelDbFloorEventsPerSec`, both of this run: comparable across runs. */
  readonly engineToFloor: number;
  readonly windowUtilization: number;
  readonly rateLimitedPerWindow: number;
  readonly declaredLimitRateLimited: number;
  readonly declaredLimitWindowUtilization: number;
  readonly crashSchedulesPerSec: number;
  /** Crash schedules checked per production path (plain, staged, exactly-once ports). */
  readonly crashSchedulesByMode: SchedulesByMode;
}

/** A goal and whether this run met it. */
export interface Goal {
  readonly goal: string;
  readonly met: boolean;
}

/** Everything `npm run bench -- --json` prints. */
export interface BenchmarkReport extends Figures {
  readonly date: string;
  readonly machine: Machine;
  readonly goals: Readonly<Record<string, Goal>>;
  readonly details: {
    readonly engine: EngineThroughput;
    readonly floor: LevelDbFloor;
    readonly retryAfter: WindowUtilization;
    readonly declared: WindowUtilization;
    readonly crashes: CrashSchedules;
  };
}

/** The goals of docs/benchmarks.md, checked against a run's figures. */
export function goalsOf(figures: Figures, crashes: CrashSchedules): Record<string, Goal> {
  return {
    engineEventsPerSec: { goal: '>= 50000', met: figures.engineEventsPerSec >= 50_000 },
    engineToFloor: { goal: '>= 0.8', met: figures.engineToFloor >= 0.8 },
    windowUtilization: { goal: '>= 0.98', met: figures.windowUtilization >= 0.98 },
    rateLimitedPerWindow: { goal: '<= 1', met: figures.rateLimitedPerWindow <= 1 },
    declaredLimitRateLimited: { goal: '0', met: figures.declaredLimitRateLimited === 0 },
    crashSchedules: { goal: 'every schedule holds', met: crashes.failure === undefined },
    crashSchedulesByMode: { goal: 'each mode > 0', met: Object.values(figures.crashSchedulesByMode).every((n) => n > 0) },
  };
}

const int = (n: number): string => Math.round(n).toLocaleString('en-US');

/** The report as a readable table, for a terminal. */
export function formatTable(report: BenchmarkReport): string {
  const { machine: m, goals: g, details: d } = report;
  const rows: Array<[string, string, Goal | undefined]> = [
    ['engine events/s (LevelDB, wall clock)', int(report.engineEventsPerSec), g.engineEventsPerSec],
    ['LevelDB floor events/s (no engine)', int(report.levelDbFloorEventsPerSec), undefined],
    ['engine ÷ LevelDB floor', report.engineToFloor.toFixed(3), g.engineToFloor],
    ['window utilization (Retry-After only)', report.windowUtilization.toFixed(4), g.windowUtilization],
    ['429s per window (Retry-After only)', report.rateLimitedPerWindow.toFixed(2), g.rateLimitedPerWindow],
    ['429s with the limit declared', int(report.declaredLimitRateLimited), g.declaredLimitRateLimited],
    ['window utilization (limit declared)', report.declaredLimitWindowUtilization.toFixed(4), undefined],
    ['crash schedules checked/s', report.crashSchedulesPerSec.toFixed(1), g.crashSchedules],
  ];
  const table = rows.map(
    ([name, value, goal]) => `${name.padEnd(40)}${value.padStart(12)}   ${(goal?.goal ?? '').padEnd(22)}${goal ? (goal.met ? 'met' : 'NOT met') : ''}`,
  );
  const windows = (w: WindowUtilization) =>
    `${w.fullWindows} full windows (${w.underusedWindows} under the limit), ${int(w.accepted)} calls accepted, ${int(w.rateLimited)} refused (at most ${w.maxRateLimitedInAWindow} in a window); ` +
    `virtual end ${int(w.virtualEndMs)} ms, lower bound ${int(w.lowerBoundMs)} ms (x${(w.virtualEndMs / w.lowerBoundMs).toFixed(3)}); ${(w.wallMs / 1_000).toFixed(1)} s wall`;
  return [
    `orderly benchmarks, ${report.date}`,
    `${m.cpuModel}, ${m.cores} cores${m.cpuMHz ? ` at ${m.cpuMHz} MHz` : ''}, ${m.memoryGiB} GiB, Node ${m.node}, ${m.os}, load ${m.loadAverage.join(' ')}`,
    '',
    `${'figure'.padEnd(40)}${'measured'.padStart(12)}   ${'goal'.padEnd(22)}`,
    ...table,
    '',
    `engine: ${int(d.engine.events)} events, ${d.engine.partitions} partitions, ${int(d.engine.keys)} keys, maxInFlight ${d.engine.maxInFlight}, ` +
      `${(d.engine.wallMs / 1_000).toFixed(1)} s wall, ${(d.engine.cpuMs / 1_000).toFixed(1)} s CPU (${int(d.engine.eventsPerCpuSec)} events per CPU second` +
      (d.engine.eventsPerMainThreadCpuSec ? `, ${int(d.engine.eventsPerMainThreadCpuSec)} per main-thread CPU second)` : ')'),
    `LevelDB floor: ${int(d.floor.events)} events from ${d.floor.concurrency} concurrent writers, ${(d.floor.wallMs / 1_000).toFixed(1)} s wall, ` +
      `${(d.floor.cpuMs / 1_000).toFixed(1)} s CPU (${int(d.floor.eventsPerCpuSec)} events per CPU second)`,
    `Retry-After only: ${windows(d.retryAfter)}`,
    `limit declared: ${windows(d.declared)}`,
    `crash schedules: ${int(d.crashes.schedules)} in ${(d.crashes.wallMs / 1_000).toFixed(1)} s (${int(d.crashes.crashed)} crashed, ` +
      `${int(d.crashes.redelivered)} with redeliveries; plain ${int(d.crashes.byMode.plain)}, staged ${int(d.crashes.byMode.staged)}, ` +
      `exactly-once ${int(d.crashes.byMode.exactlyOnce)}), fast-check seed ${d.crashes.seed}` +
      (d.crashes.failure ? `\nFAILED:\n${d.crashes.failure}` : ', every one held'),
    '',
  ].join('\n');
}
