/**
 * orderly's benchmarks: `npm run -s bench` prints a table, `npm run -s bench -- --json` one JSON
 * object. Progress goes to stderr. Every figure is measured on this run; see docs/benchmarks.md.
 */
import { measureCrashSchedules } from './crashSchedules.js';
import { engineThroughputDefaults, measureEngineThroughput } from './engineThroughput.js';
import { measureLevelDbFloor } from './levelDbFloor.js';
import { describeMachine } from './machine.js';
import { progressOnStderr } from './progress.js';
import { formatTable, goalsOf, type BenchmarkReport } from './report.js';
import { measureWindowUtilization } from './windowUtilization.js';

const USAGE = 'npm run -s bench -- [--json]: the engine, its LevelDB floor, rate-limit windows and crash schedules (docs/benchmarks.md)\n';

async function main(argv: readonly string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  const unknown = argv.filter((a) => a !== '--json');
  if (unknown.length > 0) {
    process.stderr.write(`bench: unknown argument ${unknown.join(' ')}: the only option is --json\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const machine = describeMachine();
  const progress = progressOnStderr();
  const engine = await measureEngineThroughput(progress, engineThroughputDefaults);
  // Right after the engine, on the same machine in the same minute: the ratio is what compares.
  const floor = await measureLevelDbFloor(progress, engineThroughputDefaults);
  const retryAfter = await measureWindowUtilization(progress, false);
  const declared = await measureWindowUtilization(progress, true);
  const crashes = await measureCrashSchedules(progress);
  const figures = {
    engineEventsPerSec: engine.eventsPerSec,
    levelDbFloorEventsPerSec: floor.eventsPerSec,
    engineToFloor: round(engine.eventsPerSec / floor.eventsPerSec, 3),
    windowUtilization: round(retryAfter.windowUtilization, 4),
    rateLimitedPerWindow: round(retryAfter.rateLimitedPerWindow, 2),
    declaredLimitRateLimited: declared.rateLimited,
    declaredLimitWindowUtilization: round(declared.windowUtilization, 4),
    crashSchedulesPerSec: crashes.schedulesPerSec,
    crashSchedulesByMode: crashes.byMode,
  };
  const report: BenchmarkReport = {
    date: new Date().toISOString(),
    machine,
    ...figures,
    goals: goalsOf(figures, crashes),
    details: { engine, floor, retryAfter, declared, crashes },
  };
  process.stdout.write(argv.includes('--json') ? `${JSON.stringify(report, null, 2)}\n` : formatTable(report));
  if (crashes.failure) process.exitCode = 1;
}

const round = (n: number, digits: number): number => Number(n.toFixed(digits));

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
