import fc from 'fast-check';
import type { CommitPolicy } from '../src/engine/engine.js';
import { crashArbitrary, drawnIn, type CrashChoice } from './arbitraries.js';
import { driverModes, type DriverFaults, type DriverMode } from './driver.js';
import { checkTopologyRun, short, topologyInvariants, type TopologyCheck, type TopologyInvariant } from './topologyInvariants.js';
import {
  runTopology,
  type ModelStandIn,
  type ResolutionKind,
  type TopologyBuilder,
  type TopologyEvent,
  type TopologyRun,
  type TopologyRunInput,
} from './topologyRun.js';
import type { ScenarioCrash } from './faultSchedule.js';
import type { InvariantViolation } from './violations.js';
import { shown } from '../src/graph/shown.js';
import { everyOptionOf, nearest, optionsProblem } from '../src/graph/optionNames.js';

/**
 * A property of the user's own over a finished run: return (or throw) what went wrong, in words;
 * nothing, or an empty list, when it held.
 */
export type UserInvariant<T> = (run: TopologyRun<T>) => void | string | readonly string[] | Promise<void | string | readonly string[]>;

/** How parked keys are resolved at the end of each run. */
export interface ResolutionOptions<T> {
  /**
   * The decision a person gives a parked event (from its decoded value), for `decision`
   * resolutions; without it only discards (and retries, if allowed) are drawn. `step` names the
   * agent step that parked the event: with several steps, the decision must pass that step's schema.
   */
  readonly decision?: (parked: { key: string | null; value: T; partition: number; offset: number; step: string }) => unknown;
  /** Draw `{ retry: true }` too: only for poison that can pass on a retry (a `failureShare`), or the key parks again. @defaultValue false */
  readonly retry?: boolean;
  /** Crash the engine at a random replayed event, and restart it. @defaultValue true */
  readonly crashWhileReplaying?: boolean;
}

/** Options of {@link topologyProperty}. */
export interface TopologyPropertyOptions<T> {
  /** Builds the topology under test around the decide functions it is given (one per agent step, by name). */
  readonly topology: TopologyBuilder;
  /** The input: keys and values of the user's own types (see {@link keyedEvents} to make one from a value arbitrary). */
  readonly events: fc.Arbitrary<readonly TopologyEvent<T>[]>;
  /** The fake model behind every agent step: its decisions, its poison, latency, limit and failures. */
  readonly model: ModelStandIn;
  /** Partitions of every topic: a number, or drawn between bounds. @defaultValue `{ min: 1, max: 3 }` */
  readonly partitions?: number | { readonly min: number; readonly max: number };
  /** The production paths drawn from (one per run). @defaultValue every mode: 'plain', 'staged', 'exactlyOnce' */
  readonly modes?: readonly DriverMode[];
  /** The commit policies drawn from. @defaultValue `'each'`, `{ everyMs: 1000 }`, `{ everyMs: 5000 }` */
  readonly commit?: readonly CommitPolicy[];
  /**
   * The faults of each run: at most `max` of the kinds and points chosen, at random times. A
   * `fenced` fault is drawn under exactly-once only (on an at-least-once path a fenced worker's late
   * writes may apply an event twice: a documented limit), and a `refused` changelog write on the
   * staged and exactly-once paths only (a plain store has no changelog). `false`: no faults. @defaultValue `{ max: 3 }`
   */
  readonly crashes?: false | (CrashChoice & { readonly max?: number });
  /**
   * Restores that take time (see DriverOptions.restoreMs): half the runs restore each partition
   * for up to this many virtual ms whenever it is given to an engine, so that faults fall while
   * partitions restore. `false`: no restores. @defaultValue `{ maxMs: 10000 }`
   */
  readonly restores?: false | { readonly maxMs: number };
  /** Resolve parked keys at the end (`false`: leave them parked). @defaultValue `{}`: discards, with a crash mid-replay */
  readonly resolutions?: false | ResolutionOptions<T>;
  /** The built-in invariants to check. @defaultValue every one, {@link topologyInvariants} */
  readonly invariants?: readonly TopologyInvariant[];
  /** Properties of the user's own over each run, by name. */
  readonly userInvariants?: Readonly<Record<string, UserInvariant<T>>>;
  /** Faults of the driver that break orderly on purpose (see DriverOptions.faults): for a canary that proves a check catches them. */
  readonly driverFaults?: DriverFaults;
}

/** A property of a topology: use `property` with `fc.assert`, or `arbitrary` and `predicate` with `@fast-check/vitest`. */
export interface TopologyProperty<T> {
  /** Draws one run's input: events, mode, partitions, commit policy, faults, resolutions, model latency, seed. */
  readonly arbitrary: fc.Arbitrary<TopologyRunInput<T>>;
  /** Runs one input and throws a {@link TopologyPropertyError} if an invariant failed. */
  predicate(input: TopologyRunInput<T>): Promise<void>;
  /** `fc.asyncProperty(arbitrary, predicate)`. */
  readonly property: fc.IAsyncPropertyWithHooks<[TopologyRunInput<T>]>;
  /** Runs one input and leaves the driver open, for a test that wants to look at a run itself; close `run.driver` after. */
  run(input: TopologyRunInput<T>): Promise<TopologyRun<T>>;
  /** Checks a run as `predicate` does, without throwing. */
  check(run: TopologyRun<T>): Promise<TopologyCheck>;
}

/** What a failing run throws: the violations, in words, and the run's input; fast-check adds the seed and path that replay it. */
export class TopologyPropertyError<T> extends Error {
  constructor(
    readonly input: TopologyRunInput<T>,
    readonly violations: readonly InvariantViolation[],
    readonly notes: readonly string[],
    /** Where the events landed; undefined when the run failed before the checks (they are printed as drawn). */
    placed: TopologyRun<T>['placed'] | undefined,
    options?: ErrorOptions & {
      /** How many resolutions the run gave parked keys (known when it finished). */
      readonly resolutionsGiven?: number;
    },
  ) {
    super(describeFailure(input, violations, notes, placed, options?.resolutionsGiven), options);
    this.name = 'TopologyPropertyError';
  }
}

/**
 * A property test of any topology: each run builds the user's topology around fake models, pipes
 * a drawn stream of the user's events through the real engine on the test driver, in one of the
 * production paths, with crashes, rebalances and fencing at random times and named points, then
 * resolves the parked keys, and checks every invariant that holds for every topology (see
 * {@link TopologyInvariant}) against what the driver observed, and the user's own.
 *
 * ```ts
 * const orders = topologyProperty({ topology: (decide) => buildOrders(decide('review')), events: keyedEvents(orderArb), model: { decide: review } });
 * await fc.assert(orders.property, { numRuns: 1_000 });                 // or:
 * test.prop([orders.arbitrary], { numRuns: 1_000 })('orders keep their promises', orders.predicate);
 * ```
 *
 * A failure names each violated invariant with the keys, offsets and order of what happened, and
 * the shrunk input (events, mode, faults); fast-check prints the seed and path that replay it
 * (`fc.assert(property, { seed, path })`).
 */
export function topologyProperty<T>(options: TopologyPropertyOptions<T>): TopologyProperty<T> {
  checkPropertyOptions(options);
  const arbitrary = runInputArbitrary(options);
  const settings = {
    topology: options.topology,
    model: options.model,
    ...(options.resolutions && options.resolutions.decision ? { resolutionDecision: options.resolutions.decision } : {}),
    ...(options.driverFaults ? { faults: options.driverFaults } : {}),
  };
  const run = (input: TopologyRunInput<T>) => runTopology(input, settings);
  const check = async (done: TopologyRun<T>): Promise<TopologyCheck> => {
    const builtIn = checkTopologyRun(done, options.invariants ?? topologyInvariants);
    const user = await userViolations(done, options.userInvariants ?? {});
    return { violations: [...builtIn.violations, ...user], notes: builtIn.notes };
  };
  const predicate = async (input: TopologyRunInput<T>): Promise<void> => {
    let done: TopologyRun<T>;
    try {
      done = await run(input);
    } catch (error) {
      // Printed with the input, as a violation is, so that the shrunk run can be read and replayed.
      throw new TopologyPropertyError(input, [{ invariant: 'run-failed', detail: error instanceof Error ? error.message : String(error) }], [], undefined, {
        cause: error,
      });
    }
    try {
      const { violations, notes } = await check(done);
      if (violations.length > 0) throw new TopologyPropertyError(input, violations, notes, done.placed, { resolutionsGiven: done.driver.resolutions().length });
    } finally {
      await done.driver.close();
    }
  };
  return { arbitrary, predicate, property: fc.asyncProperty(arbitrary, predicate), run, check };
}

/**
 * Events of the user's value type over a few keys, so that keys repeat (per-key order has
 * something to check): `keys` keys named `k0`, `k1`, ... or drawn from a key arbitrary.
 */
export function keyedEvents<T>(
  value: fc.Arbitrary<T>,
  options: { keys?: number | fc.Arbitrary<string>; maxEvents?: number } = {},
): fc.Arbitrary<TopologyEvent<T>[]> {
  const keys = options.keys ?? 5;
  const key = typeof keys === 'number' ? fc.integer({ min: 0, max: keys - 1 }).map((k) => `k${k}`) : keys;
  return fc.array(fc.record({ key, value }), { maxLength: options.maxEvents ?? 24, size: 'medium' });
}

function runInputArbitrary<T>(options: TopologyPropertyOptions<T>): fc.Arbitrary<TopologyRunInput<T>> {
  const modes = options.modes ?? driverModes;
  if (modes.length === 0) throw new RangeError('topologyProperty: modes must name at least one of plain, staged, exactlyOnce');
  const partitions = typeof options.partitions === 'number' ? { min: options.partitions, max: options.partitions } : (options.partitions ?? { min: 1, max: 3 });
  const commit = options.commit ?? ['each', { everyMs: 1_000 }, { everyMs: 5_000 }];
  const latency = options.model.latencyMs ?? { min: 0, max: 5_000 };
  const latencyMs = typeof latency === 'number' ? fc.constant(latency) : fc.integer(latency);
  const crashes: fc.Arbitrary<ScenarioCrash[]> =
    options.crashes === false ? fc.constant([]) : fc.array(crashArbitrary(options.crashes ?? {}), { maxLength: options.crashes?.max ?? 3 });
  const resolving = options.resolutions === false ? undefined : (options.resolutions ?? {});
  const kinds: ResolutionKind[] = ['discard', ...(resolving?.decision ? (['decision'] as const) : []), ...(resolving?.retry ? (['retry'] as const) : [])];
  // Kinds are used in turn: one that is not a retry among them ends a key that parks again on every retry.
  const resolutions: fc.Arbitrary<ResolutionKind[]> = resolving
    ? fc
        .array(fc.constantFrom(...kinds), { minLength: 1, maxLength: 4 })
        .map((list) => (list.some((k) => k !== 'retry') ? list : [...list, 'discard' as const]))
    : fc.constant([]);
  const replayCrash =
    resolving && resolving.crashWhileReplaying !== false
      ? fc.option(fc.record({ nth: fc.integer({ min: 1, max: 3 }), restartAfterMs: fc.integer({ min: 0, max: 5_000 }) }), { nil: undefined })
      : fc.constant(undefined);
  return fc
    .record({
      mode: fc.constantFrom(...modes),
      partitions: fc.integer(partitions),
      commit: fc.constantFrom(...commit),
      events: options.events,
      crashes,
      resolutions,
      replayCrash,
      model: fc.record({ latencyMs, failureShare: fc.constant(options.model.failureShare ?? 0) }),
      restoreMs: restoreMsArbitrary(options.restores ?? { maxMs: 10_000 }),
      seed: fc.integer(),
    })
    .map(({ replayCrash: crash, restoreMs, ...input }) => ({
      ...input,
      ...(crash ? { replayCrash: crash } : {}),
      ...(restoreMs ? { restoreMs } : {}),
      // A fenced worker that still writes is drawn under exactly-once only (see crashes), a refused changelog write where there is a changelog.
      crashes: input.crashes.filter((c) => drawnIn(input.mode, c)),
    }));
}

async function userViolations<T>(run: TopologyRun<T>, invariants: Readonly<Record<string, UserInvariant<T>>>): Promise<InvariantViolation[]> {
  const found: InvariantViolation[] = [];
  for (const [name, invariant] of Object.entries(invariants)) {
    let said: void | string | readonly string[];
    try {
      said = await invariant(run);
    } catch (error) {
      said = error instanceof Error ? error.message : String(error);
    }
    const details = said === undefined ? [] : typeof said === 'string' ? [said] : said;
    for (const detail of details) found.push({ invariant: 'user-invariant', name, detail });
  }
  return found;
}

function describeFailure<T>(
  input: TopologyRunInput<T>,
  violations: readonly InvariantViolation[],
  notes: readonly string[],
  placed: TopologyRun<T>['placed'] | undefined,
  resolutionsGiven: number | undefined,
): string {
  const commit = input.commit === 'each' ? 'after each event' : `every ${input.commit.everyMs} ms`;
  const lines = [
    `topologyProperty: ${violations.length} violation${violations.length === 1 ? '' : 's'} (mode '${input.mode}', ${input.partitions} partition${input.partitions === 1 ? '' : 's'}, commit ${commit}, model latency ${input.model.latencyMs} ms, seed ${input.seed})`,
    ...violations.map((v) => `  ${v.name ? `${v.invariant} '${v.name}'` : v.invariant}: ${v.detail}`),
    ...(notes.length > 0 ? ['notes (not failures):', ...notes.map((n) => `  ${n}`)] : []),
    ...(placed
      ? [
          `events (${placed.length}), as placed:`,
          ...placed.slice(0, 40).map((e) => `  partition ${e.partition} offset ${e.offset}: key ${JSON.stringify(e.key)}, value ${short(e.value)}`),
        ]
      : [`events (${input.events.length}), as drawn:`, ...input.events.slice(0, 40).map((e) => `  key ${JSON.stringify(e.key)}, value ${short(e.value)}`)]),
    ...(input.events.length > 40 ? [`  ... and ${input.events.length - 40} more`] : []),
    `faults: ${input.crashes.length === 0 ? 'none' : input.crashes.map(describeCrash).join('; ')}`,
    `restores: ${input.restoreMs ? `partition p takes [${input.restoreMs.join(', ')}][p % ${input.restoreMs.length}] ms` : 'none'}`,
    `resolutions: ${input.resolutions.length === 0 ? 'none (parked keys stay parked)' : `${input.resolutions.join(', ')} (drawn, given in turn; ${givenCount(resolutionsGiven)})`}${input.replayCrash ? `, with a crash at replayed event ${input.replayCrash.nth} and a restart ${input.replayCrash.restartAfterMs} ms later` : ''}`,
  ];
  return lines.join('\n');
}

function givenCount(given: number | undefined): string {
  if (given === undefined) return 'the run did not finish';
  return given === 0 ? 'none given: no key was parked at the end' : `${given} given`;
}

/** Half the time none, else 1 to 4 lengths that the partitions take in turn. */
function restoreMsArbitrary(restores: false | { readonly maxMs: number }): fc.Arbitrary<readonly number[] | undefined> {
  if (restores === false) return fc.constant(undefined);
  if (!Number.isFinite(restores.maxMs) || restores.maxMs < 0)
    throw new RangeError(`topologyProperty: restores.maxMs must be 0 or more, got ${shown(restores.maxMs)}; or restores: false for none`);
  return fc.option(fc.array(fc.integer({ min: 0, max: Math.floor(restores.maxMs) }), { minLength: 1, maxLength: 4 }), { nil: undefined, freq: 2 });
}

function describeCrash(crash: ScenarioCrash): string {
  switch (crash.kind) {
    case 'at':
      return `crash ${crash.delayMs} ms on, restart ${crash.restartAfterMs} ms later`;
    case 'point':
      return `crash at '${crash.point}' (time ${crash.nth} it is reached), restart ${crash.restartAfterMs} ms later`;
    case 'revoke':
      return `${crash.lost ? 'lose' : 'revoke'} partitions (mask ${crash.partitions}) ${crash.delayMs} ms on, and assign them back`;
    case 'fenced':
      return `fence the engine out ${crash.delayMs} ms on, its successor ${crash.restartAfterMs} ms later, the old one told ${crash.lostAfterMs} ms after the fence`;
    case 'refused':
      return `Kafka refuses the changelog records of staged write ${crash.nth} for good, restart ${crash.restartAfterMs} ms later`;
    case 'stop':
      return `stop as on SIGTERM ${crash.delayMs} ms on, ${crash.graceMs > 0 ? `with ${crash.graceMs} ms of grace` : 'without grace'}, restart ${crash.restartAfterMs} ms later`;
  }
}

/** The built-in invariants not among the defaults (see {@link TopologyInvariant}). */
const OPT_IN_INVARIANTS = ['row-shared-by-keys', 'decision-refused'] as const satisfies readonly TopologyInvariant[];

/** Every option of {@link TopologyPropertyOptions}, and of its model stand-in. */
const PROPERTY_OPTIONS = everyOptionOf<TopologyPropertyOptions<unknown>>()([
  'topology',
  'events',
  'model',
  'partitions',
  'modes',
  'commit',
  'crashes',
  'restores',
  'resolutions',
  'invariants',
  'userInvariants',
  'driverFaults',
]);
const MODEL_OPTIONS = everyOptionOf<ModelStandIn>()(['decide', 'poison', 'poisonDecision', 'latencyMs', 'limit', 'failureShare', 'syncShare']);

/**
 * Refuses a misspelt option (in plain JavaScript it would be ignored: `crash` for `crashes` runs
 * with the default faults) and an invariant name that is not one (checking only the names given,
 * a misspelt one would leave every built-in check off).
 */
function checkPropertyOptions<T>(options: TopologyPropertyOptions<T>): void {
  const problem = optionsProblem(options, PROPERTY_OPTIONS) ?? optionsProblem(options.model, MODEL_OPTIONS, 'model.');
  if (problem !== undefined) throw new TypeError(`topologyProperty: ${problem}`);
  const known: readonly string[] = [...topologyInvariants, ...OPT_IN_INVARIANTS];
  for (const name of options.invariants ?? []) {
    if (known.includes(name)) continue;
    const near = nearest(String(name), known);
    throw new RangeError(
      `topologyProperty: invariants names '${String(name)}', which is not one${near ? ` (did you mean '${near}'?)` : ''}; the built-in invariants are ${known.join(', ')} (your own go in userInvariants)`,
    );
  }
}
