import { effect } from '../src/dsl/effect.js';
import { stream } from '../src/dsl/stream.js';
import type { CommitPolicy } from '../src/engine/engine.js';
import type { Resolution } from '../src/engine/parkedKeys.js';
import type { CrashPoint } from './crashPoints.js';
import { TopologyTestDriver } from './driver.js';
import { fakeModel } from './fakeModel.js';
import { asObject, checkedSchema } from './scenarios/checkedSchema.js';

/** One event of a generated stream. */
export interface ScenarioEvent {
  readonly key: string;
  readonly partition: number;
  /** Its decision never validates: it must be parked, with the later events of its key held. */
  readonly poison: boolean;
}

/** A crash: at a virtual time after the previous step, or at the nth time a named point is reached. */
export type ScenarioCrash =
  | { readonly kind: 'at'; readonly delayMs: number; readonly restartAfterMs: number }
  | { readonly kind: 'point'; readonly point: CrashPoint; readonly nth: number; readonly restartAfterMs: number };

/** Everything one run of the crash harness is made of: the stream, the model, the engine's options, the faults. */
export interface CrashScenario {
  readonly partitions: number;
  readonly events: readonly ScenarioEvent[];
  readonly maxInFlight: number;
  readonly attempts: number;
  readonly retryDelayMs: number;
  readonly commit: CommitPolicy;
  readonly model: { readonly latencyMs: number; readonly limit?: { calls: number; windowMs: number }; readonly declareLimit: boolean };
  readonly crashes: readonly ScenarioCrash[];
  /** How each parked key is resolved, in turn. */
  readonly resolutions: readonly ('decision' | 'discard')[];
  /** A crash in the middle of the replays, at the nth replayed event. */
  readonly replayCrash?: { readonly nth: number; readonly restartAfterMs: number };
  readonly seed: number;
}

/** What a run left behind, for the invariants. */
export interface ScenarioRun {
  readonly scenario: CrashScenario;
  readonly driver: TopologyTestDriver;
  /** Where every event landed in the log, in piping order. */
  readonly placed: ReadonlyArray<ScenarioEvent & { offset: number }>;
  /** The history's length when every fault had healed and before any key was resolved. */
  readonly beforeResolutions: number;
}

const ScenarioDecision = checkedSchema<{ ok: true; n: number }>('orderly-crash-scenario', (value) => {
  const decision = asObject(value);
  return decision?.ok === true && typeof decision.n === 'number' ? [] : [`a decision is { ok: true, n: number }, got ${JSON.stringify(value)}`];
});

/**
 * Runs a scenario on the test driver: pipes the stream, applies each crash and its restart, lets
 * the run heal and settle, then resolves every parked key until none is left. Returns the driver
 * for the invariants to read; the caller closes it.
 */
export async function runCrashScenario(scenario: CrashScenario, options: { stateDir?: string; commitAheadBy?: number } = {}): Promise<ScenarioRun> {
  const model = fakeModel<{ n: number; poison: boolean }, { ok: true; n: number }>({
    latencyMs: scenario.model.latencyMs,
    ...(scenario.model.limit ? { limit: scenario.model.limit } : {}),
    poison: (e) => e.poison,
    decide: (e) => ({ ok: true, n: e.n }),
  });
  const topology = stream<{ n: number; poison: boolean }>('in')
    .keyedSerial({ maxInFlight: scenario.maxInFlight })
    .agentStep('decide', model.decide, { schema: ScenarioDecision, ...(scenario.model.declareLimit && scenario.model.limit ? { limit: scenario.model.limit } : {}) })
    .park({ attempts: scenario.attempts, retryDelayMs: scenario.retryDelayMs })
    .applyOnce(effect('fx', (v, { state }) => state.put(String(v.event.n), v.decision)))
    .to('out')
    .build();
  const driver = new TopologyTestDriver(topology, {
    partitions: scenario.partitions,
    seed: scenario.seed,
    commit: scenario.commit,
    ...(options.stateDir ? { stateDir: options.stateDir } : {}),
    ...(options.commitAheadBy ? { faults: { commitAheadBy: options.commitAheadBy } } : {}),
  });
  const input = driver.createInputTopic<{ n: number; poison: boolean }>('in');
  const placed = scenario.events.map((e, n) => ({ ...e, offset: input.pipeInput(e.key, { n, poison: e.poison }, { partition: e.partition }).offset }));
  for (const crash of scenario.crashes) {
    if (crash.kind === 'at') driver.crash({ at: driver.now() + crash.delayMs });
    else driver.crash({ point: crash.point, nth: crash.nth });
    await driver.runUntilIdle();
    driver.disarm();
    if (!driver.running) {
      driver.restart({ after: crash.restartAfterMs });
      await driver.runUntilIdle();
    }
  }
  await driver.runUntilIdle();
  const beforeResolutions = driver.history().length;
  await resolveAll(driver, scenario);
  return { scenario, driver, placed, beforeResolutions };
}

/** Resolves parked keys until none is left, through a crash mid-replay if asked. */
async function resolveAll(driver: TopologyTestDriver, scenario: CrashScenario): Promise<void> {
  const kinds = scenario.resolutions;
  if (scenario.replayCrash) driver.crash({ point: 'replaying', nth: scenario.replayCrash.nth });
  let turn = 0;
  for (let round = 0; round < 100; round++) {
    if (!driver.running) {
      driver.restart({ after: scenario.replayCrash?.restartAfterMs ?? 0 });
      await driver.runUntilIdle();
    }
    const parked = driver.parked().filter((p) => p.status === 'parked');
    if (parked.length === 0 && driver.parked().length === 0) return;
    for (const p of parked) {
      if (!driver.running) break;
      const kind = kinds[turn++ % Math.max(1, kinds.length)] ?? 'decision';
      const resolution: Resolution = kind === 'discard' ? { discard: true } : { decision: { ok: true, n: -1 } };
      try {
        await driver.resolve(p.partition, p.lane, resolution);
      } catch (error) {
        // A crash mid-replay interrupts the call; the next round restarts and resolves what is left.
        if (driver.running) throw error;
      }
    }
    await driver.runUntilIdle();
  }
  throw new Error('runCrashScenario: parked keys were still left after 100 rounds of resolutions');
}
