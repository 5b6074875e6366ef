import fc from 'fast-check';
import { z } from 'zod';
import { effect, stream, type CommitPolicy, type Decided } from '../src/index.js';
import { crashPoints, type CrashPoint } from '../testkit/crashPoints.js';
import { TopologyTestDriver } from '../testkit/driver.js';
import { fakeModel } from '../testkit/fakeModel.js';
import type { Progress } from './progress.js';

const partitions = 3;
const keys = ['k0', 'k1', 'k2', 'k3', 'k4'];
const attempts = 2;

/** One random schedule: a small stream, one crash, a restart, and the engine's settings. */
interface Schedule {
  /** Each event's key (an index into `keys`, which also picks its partition) and whether its decision never validates. */
  readonly events: ReadonlyArray<{ readonly key: number; readonly poison: boolean }>;
  readonly crash: { readonly atMs: number } | { readonly point: CrashPoint; readonly nth: number };
  readonly restartAfterMs: number;
  readonly commit: CommitPolicy;
  readonly latencyMs: number;
  readonly maxInFlight: number;
  readonly rateLimited: boolean;
  readonly seed: number;
}

const scheduleArbitrary: fc.Arbitrary<Schedule> = fc.record({
  events: fc.array(fc.record({ key: fc.nat({ max: keys.length - 1 }), poison: fc.nat({ max: 9 }).map((n) => n === 0) }), { minLength: 1, maxLength: 30 }),
  crash: fc.oneof(
    fc.record({ atMs: fc.nat({ max: 20_000 }) }),
    fc.record({ point: fc.constantFrom(...crashPoints), nth: fc.integer({ min: 1, max: 3 }) }),
  ),
  restartAfterMs: fc.nat({ max: 30_000 }),
  commit: fc.oneof(fc.constant<CommitPolicy>('each'), fc.record({ everyMs: fc.integer({ min: 100, max: 10_000 }) })),
  latencyMs: fc.nat({ max: 2_000 }),
  maxInFlight: fc.integer({ min: 1, max: 4 }),
  rateLimited: fc.boolean(),
  seed: fc.nat(),
});

/** How many schedules exercised a crash: a crash point may never be reached, a crash may come after the end. */
interface Tally {
  /** Schedules whose crash happened. */
  crashed: number;
  /** Schedules in which the restarted engine received some events again. */
  redelivered: number;
}

interface Claim {
  readonly n: number;
}

const Verdict = z.object({ ok: z.literal(true) });

/**
 * Runs one schedule on the test driver (memory-level state): pipes the stream, crashes at the
 * time or point, restarts after the delay and runs until idle; then checks that no effect was
 * applied twice, none out of its key's order, and each event that is neither poison nor behind a
 * poison event of its key was applied exactly once.
 */
async function checkSchedule(schedule: Schedule, tally: Tally): Promise<void> {
  const model = fakeModel<Claim, { ok: true }>({
    latencyMs: schedule.latencyMs,
    ...(schedule.rateLimited ? { limit: { calls: 3, windowMs: 2_000 } } : {}),
    poison: (claim) => schedule.events[claim.n]!.poison,
    decide: () => ({ ok: true }),
  });
  const topology = stream<Claim>('claims')
    .keyedSerial({ maxInFlight: schedule.maxInFlight })
    .agentStep('judge', model.decide, { schema: Verdict })
    .park({ attempts, retryDelayMs: 500 })
    .applyOnce(effect('payouts', ({ event }: Decided<Claim, { ok: true }>, { state }) => state.put(String(event.n), true)))
    .build();
  const driver = new TopologyTestDriver(topology, { partitions, commit: schedule.commit, seed: schedule.seed });
  try {
    const input = driver.createInputTopic<Claim>('claims');
    const placed = schedule.events.map((e, n) => ({ ...e, ...input.pipeInput(keys[e.key]!, { n }, { partition: e.key % partitions }) }));
    driver.crash('atMs' in schedule.crash ? { at: schedule.crash.atMs } : schedule.crash);
    await driver.runUntilIdle();
    if (driver.metrics().crashes > 0) {
      driver.restart({ after: schedule.restartAfterMs });
      await driver.runUntilIdle();
    }
    const metrics = driver.metrics();
    if (metrics.crashes > 0) tally.crashed += 1;
    if (metrics.redeliveries > 0) tally.redelivered += 1;
    if (metrics.doubleEffects !== 0) throw new Error(`${metrics.doubleEffects} effects were applied twice`);
    if (metrics.orderViolations !== 0) throw new Error(`${metrics.orderViolations} effects were applied out of their key's order`);
    const applied = new Map<string, number>();
    for (const e of driver.effects()) applied.set(`${e.partition}/${e.offset}`, (applied.get(`${e.partition}/${e.offset}`) ?? 0) + 1);
    const poisoned = new Set<number>();
    for (const event of placed) {
      if (event.poison) poisoned.add(event.key);
      const expected = poisoned.has(event.key) ? 0 : 1;
      const times = applied.get(`${event.partition}/${event.offset}`) ?? 0;
      if (times !== expected) throw new Error(`event ${event.partition}/${event.offset} (key ${keys[event.key]}) was applied ${times} times, not ${expected}`);
    }
  } finally {
    await driver.close();
  }
}

/** What the crash harness checked. */
export interface CrashSchedules extends Readonly<Tally> {
  readonly schedulesPerSec: number;
  readonly schedules: number;
  readonly wallMs: number;
  /** fast-check's seed of the first batch; batch i ran with seed + i. */
  readonly seed: number;
  /** fast-check's report of the first failing schedule, shrunk; absent when every schedule held. */
  readonly failure?: string;
}

/** Checks random crash schedules for `durationMs` of wall time, in fast-check batches of `batch` schedules. */
export async function measureCrashSchedules(progress: Progress, durationMs = 10_000, batch = 20): Promise<CrashSchedules> {
  const seed = Date.now() % 2 ** 31;
  const tally: Tally = { crashed: 0, redelivered: 0 };
  const property = fc.asyncProperty(scheduleArbitrary, (schedule) => checkSchedule(schedule, tally));
  const phase = progress.phase('crash schedules', durationMs / 1_000, 's');
  const started = performance.now();
  let schedules = 0;
  let failure: string | undefined;
  for (let i = 0; performance.now() - started < durationMs && failure === undefined; i++) {
    const details = await fc.check(property, { numRuns: batch, seed: seed + i });
    schedules += details.numRuns;
    if (details.failed) failure = `${messageOf(details.errorInstance)}\n${fc.defaultReportMessage(details) ?? `seed ${seed + i}`}`;
    phase.update(Math.floor((performance.now() - started) / 1_000));
  }
  const wallMs = performance.now() - started;
  const schedulesPerSec = Math.round((schedules / wallMs) * 1_000 * 10) / 10;
  phase.finish(failure ? 'a schedule FAILED' : `${schedulesPerSec} schedules/s, ${schedules} checked`);
  return { schedulesPerSec, schedules, ...tally, wallMs: Math.round(wallMs), seed, ...(failure ? { failure } : {}) };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
