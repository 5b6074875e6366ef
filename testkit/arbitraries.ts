import fc from 'fast-check';
import { crashPoints } from './crashPoints.js';
import { driverModes } from './driver.js';
import type { CrashPoint } from './crashPoints.js';
import type { CrashScenario, ScenarioCrash, ScenarioEvent } from './crashScenario.js';

/** Bounds of {@link crashScenarioArbitrary}. */
export interface CrashScenarioBounds {
  maxPartitions?: number;
  maxEvents?: number;
  maxKeys?: number;
  maxCrashes?: number;
}

/** Events over a small pool of keys (so keys repeat), some of them poison. */
export function scenarioEventsArbitrary(partitions: number, bounds: CrashScenarioBounds = {}): fc.Arbitrary<ScenarioEvent[]> {
  const keys = fc.integer({ min: 0, max: (bounds.maxKeys ?? 5) - 1 }).map((k) => `k${k}`);
  // Poison is rare (about one event in eight), as in a real stream.
  const event = fc.record({
    key: keys,
    partition: fc.integer({ min: 0, max: partitions - 1 }),
    poison: fc.integer({ min: 0, max: 7 }).map((draw) => draw === 0),
  });
  // 'medium' lets lengths reach maxEvents; fast-check's default size keeps arrays to about 10.
  return fc.array(event, { maxLength: bounds.maxEvents ?? 24, size: 'medium' });
}

/** Which faults {@link crashArbitrary} draws. */
export interface CrashChoice {
  /** @defaultValue every kind: 'at', 'point', 'revoke', 'refused', 'fenced', 'stop' */
  readonly kinds?: readonly ScenarioCrash['kind'][];
  /** The named points a 'point' crash picks from. @defaultValue every crash point */
  readonly points?: readonly CrashPoint[];
}

/**
 * A crash at a random virtual time or at a random named point, and a restart after a random delay;
 * or a rebalance at a random virtual time that revokes or loses random partitions and assigns them
 * back; a changelog write refused for good; a worker fenced out of its group that races its
 * successor; or a stop as on SIGTERM, with or without a grace period, and a restart.
 */
export function crashArbitrary(choice: CrashChoice = {}): fc.Arbitrary<ScenarioCrash> {
  const restartAfterMs = fc.integer({ min: 0, max: 20_000 });
  const kinds = new Set(choice.kinds ?? ['at', 'point', 'revoke', 'refused', 'fenced', 'stop']);
  const points = choice.points ?? crashPoints;
  if (kinds.size === 0 || (kinds.has('point') && points.length === 0))
    throw new RangeError('crashArbitrary: choose at least one kind of fault, and at least one point for point crashes');
  const each: Array<fc.Arbitrary<ScenarioCrash>> = [];
  if (kinds.has('at')) each.push(fc.record({ kind: fc.constant('at' as const), delayMs: fc.integer({ min: 0, max: 40_000 }), restartAfterMs }));
  if (kinds.has('point'))
    each.push(fc.record({ kind: fc.constant('point' as const), point: fc.constantFrom(...points), nth: fc.integer({ min: 1, max: 4 }), restartAfterMs }));
  if (kinds.has('revoke'))
    each.push(
      fc.record({
        kind: fc.constant('revoke' as const),
        delayMs: fc.integer({ min: 0, max: 40_000 }),
        partitions: fc.integer({ min: 1, max: 7 }),
        lost: fc.boolean(),
      }),
    );
  if (kinds.has('refused')) each.push(fc.record({ kind: fc.constant('refused' as const), nth: fc.integer({ min: 1, max: 6 }), restartAfterMs }));
  if (kinds.has('stop'))
    each.push(
      fc.record({
        kind: fc.constant('stop' as const),
        delayMs: fc.integer({ min: 0, max: 40_000 }),
        graceMs: fc.constantFrom(0, 0, 1_000, 10_000),
        restartAfterMs,
      }),
    );
  if (kinds.has('fenced')) {
    each.push(
      fc.record({
        kind: fc.constant('fenced' as const),
        delayMs: fc.integer({ min: 0, max: 40_000 }),
        lostAfterMs: fc.integer({ min: 0, max: 20_000 }),
        restartAfterMs: fc.integer({ min: 0, max: 20_000 }),
      }),
    );
  }
  return fc.oneof(...each);
}

/**
 * Random streams (keys, partitions, poison), random model behaviour (latency, windows, declared or
 * only Retry-After), random engine options (window, attempts, both commit modes), a random
 * production path (plain, staged or exactly-once ports) and a random schedule of crashes and restarts,
 * for `runCrashScenario` (orderly's own topology; for yours, topologyProperty draws its inputs).
 */
export function crashScenarioArbitrary(bounds: CrashScenarioBounds = {}): fc.Arbitrary<CrashScenario> {
  return fc
    .integer({ min: 1, max: bounds.maxPartitions ?? 3 })
    .chain((partitions) =>
      fc.record({
        partitions: fc.constant(partitions),
        events: scenarioEventsArbitrary(partitions, bounds),
        maxInFlight: fc.integer({ min: 1, max: 4 }),
        attempts: fc.integer({ min: 1, max: 3 }),
        retryDelayMs: fc.constantFrom(0, 500, 1_000),
        commit: fc.oneof(fc.constant('each' as const), fc.record({ everyMs: fc.constantFrom(1_000, 5_000) })),
        model: fc.record({
          latencyMs: fc.integer({ min: 0, max: 5_000 }),
          limit: fc.option(fc.record({ calls: fc.integer({ min: 1, max: 8 }), windowMs: fc.constantFrom(1_000, 10_000) }), { nil: undefined }),
          declareLimit: fc.boolean(),
        }),
        crashes: fc.array(crashArbitrary(), { maxLength: bounds.maxCrashes ?? 3 }),
        resolutions: fc.array(fc.constantFrom('decision' as const, 'discard' as const), { minLength: 1, maxLength: 4 }),
        replayCrash: fc.option(fc.record({ nth: fc.integer({ min: 1, max: 3 }), restartAfterMs: fc.integer({ min: 0, max: 5_000 }) }), { nil: undefined }),
        // Each schedule runs one production path, as a swarm test draws its options.
        mode: fc.constantFrom(...driverModes),
        // One agent step, or two chained, each with its own park.
        steps: fc.constantFrom(1 as const, 2 as const),
        // Half the schedules run durable steps in 'decide' (1, 2 or 3), half none.
        runSteps: fc.constantFrom(0 as const, 0 as const, 0 as const, 1 as const, 2 as const, 3 as const),
        // Half the schedules wrap their effect rings within a few events (2 to 6 positions).
        effectRingSize: fc.option(fc.integer({ min: 2, max: 6 }), { nil: undefined, freq: 2 }),
        // Half the schedules restore each partition for a while whenever an engine is given it.
        restoreMs: fc.option(fc.array(fc.integer({ min: 0, max: 10_000 }), { minLength: 1, maxLength: 3 }), { nil: undefined, freq: 2 }),
        seed: fc.integer(),
      }),
    )
    .map((scenario) => ({ ...scenario, crashes: scenario.crashes.filter((c) => drawnIn(scenario.mode, c)) })) as fc.Arbitrary<CrashScenario>;
}

/** Whether a fault applies to a production path. */
/** Whether a fault can be drawn on this production path. */
export function drawnIn(mode: CrashScenario['mode'], crash: ScenarioCrash): boolean {
  // A fenced worker that still writes is drawn under exactly-once only: on at-least-once paths
  // its late writes can apply an event twice, a documented limit (docs/guarantees.md).
  if (crash.kind === 'fenced') return mode === 'exactlyOnce';
  // A refused changelog write needs a changelog: a plain store has none.
  if (crash.kind === 'refused') return mode !== 'plain';
  return true;
}
