import fc from 'fast-check';
import { crashScenarioArbitrary } from '../testkit/arbitraries.js';
import { runCrashScenario } from '../testkit/crashScenario.js';
import { assertCrashScenario } from '../testkit/invariants.js';
import type { Progress } from './progress.js';

/** How many schedules exercised a crash: a crash point may never be reached, a crash may come after the end. */
interface Tally {
  /** Schedules in which the engine crashed at least once. */
  crashed: number;
  /** Schedules in which a restarted engine received some events again. */
  redelivered: number;
}

/** Schedules checked per production path the driver's ports took. */
export type SchedulesByMode = Record<'plain' | 'staged' | 'exactlyOnce', number>;

/** What the crash harness checked. */
export interface CrashSchedules extends Readonly<Tally> {
  readonly schedulesPerSec: number;
  readonly schedules: number;
  readonly byMode: SchedulesByMode;
  readonly wallMs: number;
  /** fast-check's seed of the first batch; batch i ran with seed + i. */
  readonly seed: number;
  /** fast-check's report of the first failing schedule, shrunk; absent when every schedule held. */
  readonly failure?: string;
}

/**
 * Checks random crash schedules for `durationMs` of wall time with the very harness of the test
 * suite (`crashScenarioArbitrary`, `runCrashScenario`, `assertCrashScenario` from the testkit,
 * memory-level state), in fast-check batches of `batch` schedules.
 */
export async function measureCrashSchedules(progress: Progress, durationMs = 10_000, batch = 50): Promise<CrashSchedules> {
  const seed = Date.now() % 2 ** 31;
  const tally: Tally = { crashed: 0, redelivered: 0 };
  const byMode: SchedulesByMode = { plain: 0, staged: 0, exactlyOnce: 0 };
  const property = fc.asyncProperty(crashScenarioArbitrary(), async (scenario) => {
    const run = await runCrashScenario(scenario);
    try {
      const metrics = run.driver.metrics();
      if (metrics.crashes > 0) tally.crashed += 1;
      if (metrics.redeliveries > 0) tally.redelivered += 1;
      assertCrashScenario(run);
      byMode[scenario.mode ?? 'plain'] += 1;
    } finally {
      await run.driver.close();
    }
  });
  const phase = progress.phase('crash schedules', durationMs / 1_000, 's');
  const started = performance.now();
  let schedules = 0;
  let failure: string | undefined;
  for (let i = 0; performance.now() - started < durationMs && failure === undefined; i++) {
    const details = await fc.check(property, { numRuns: batch, seed: seed + i });
    schedules += details.numRuns;
    if (details.failed) failure = fc.defaultReportMessage(details) ?? `seed ${seed + i}`;
    phase.update(Math.floor((performance.now() - started) / 1_000));
  }
  const wallMs = performance.now() - started;
  const schedulesPerSec = Math.round((schedules / wallMs) * 1_000 * 10) / 10;
  phase.finish(failure ? 'a schedule FAILED' : `${schedulesPerSec} schedules/s, ${schedules} checked`);
  return { schedulesPerSec, schedules, byMode, ...tally, wallMs: Math.round(wallMs), seed, ...(failure ? { failure } : {}) };
}
