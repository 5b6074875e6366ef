import { effect } from '../src/dsl/effect.js';
import { stream } from '../src/dsl/stream.js';
import type { CommitPolicy } from '../src/engine/engine.js';
import { applyFault, resolveAllParked, type ScenarioCrash } from './faultSchedule.js';
import { isRateLimited, RateLimited } from '../src/dsl/rateLimited.js';
import type { DecideContext, DecideFn, DurableStepContext } from '../src/graph/nodes.js';
import { sleep } from '../src/ports/clock.js';
import { stateKeys } from '../src/state/stateKeys.js';
import { attemptsStoreOf } from '../src/graph/stores.js';
import type { StoreOp } from '../src/ports/store.js';
import { TopologyTestDriver, type DriverMode } from './driver.js';
import { SeededRandom } from './seededRandom.js';
import { checkStateMatchesEffects, type AppliedRow } from './effectStateCheck.js';
import { fakeModel, type FakeModel } from './fakeModel.js';
import { asObject, checkedSchema } from './scenarios/checkedSchema.js';
import type { InvariantViolation } from './violations.js';
import { restoreMsOf } from './topologyRun.js';

export type { ScenarioCrash } from './faultSchedule.js';

/** One event of a generated stream. */
export interface ScenarioEvent {
  readonly key: string;
  readonly partition: number;
  /** Its decision never validates: it must be parked, with the later events of its key held. */
  readonly poison: boolean;
}

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
  /**
   * 2: a 'classify' step (answering at once or later, failing an attempt now and then, never
   * poison) with its own park runs before 'decide', which sees its decision in ctx.decisions.
   * @defaultValue 1
   */
  readonly steps?: 1 | 2;
  /**
   * Durable steps (`ctx.step`) the 'decide' step's run takes after the model answered, each calling
   * a fake tool that reports its runs to the driver: none is run again once its journal entry is
   * durable. @defaultValue 0
   */
  readonly runSteps?: 0 | 1 | 2 | 3;
  /** Which production path the ports take (see DriverOptions.mode). @defaultValue 'plain' */
  readonly mode?: DriverMode;
  /** Positions in each partition's ring of effect records (see DriverOptions.effectRingSize): a few make it wrap. @defaultValue 16384 */
  readonly effectRingSize?: number;
  /** How long each partition's restore takes: partition `p` takes `restoreMs[p % restoreMs.length]` virtual ms (see DriverOptions.restoreMs). @defaultValue no restores */
  readonly restoreMs?: readonly number[];
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
  /** The fake provider the step called, with its own record of calls and refusals. */
  readonly model: FakeModel<ScenarioValue, ScenarioDecisionValue>;
  /** What the state showed against the effects recorded, checked after every crash and at the end. */
  readonly stateViolations: readonly InvariantViolation[];
  /** How often the fake tool of the durable steps ran, by `<effect id> <step>`. */
  readonly toolRuns: ReadonlyMap<string, number>;
}

/**
 * Faults that break orderly on purpose, for canary tests that prove the invariants catch each:
 * - `commitAheadBy`: the log commits past what it was asked (see DriverOptions.faults);
 * - `metadataListsUnfinished`: each commit's metadata lists an unfinished offset as finished (see DriverOptions.faults);
 * - `splitEffectBatch`: an effect's state writes and its record land in two batches (see DriverOptions.faults);
 * - `ignoreRetryAfter`: the engine hears every 429 with a Retry-After of 0, as a gate that reopens at once would;
 * - `durableAtLanding` (staged, exactly-once): an event finishes before its staged write is durable (see DriverOptions.faults);
 * - `offsetsOutsideTransaction` (exactly-once): offsets are committed outside the transaction (see DriverOptions.faults);
 * - `syncAnswerSkipsAttempts`: the attempts record of a step answered synchronously is never written;
 * - `unfencedProducer` (exactly-once): a worker fenced out of its group still commits its transactions (see DriverOptions.faults);
 * - `changelogGaps` (staged): writes after one Kafka refused are still acknowledged, a gap in the changelog (see DriverOptions.faults);
 * - `resetKeepsLocalState` (exactly-once): the reset after an aborted transaction keeps the landed writes it threw away (see DriverOptions.faults);
 * - `skipRunJournal`: reads of run journals find nothing, as an engine that skipped the journal lookup of `ctx.step` would (see DriverOptions.faults);
 * - `pruneAheadOfCommit`: a prune of a partition's effect records deletes them all, those at or above the committed offset too (see DriverOptions.faults).
 */
export interface ScenarioFaults {
  readonly commitAheadBy?: number;
  readonly metadataListsUnfinished?: boolean;
  readonly splitEffectBatch?: 'state-first' | 'record-first';
  readonly ignoreRetryAfter?: boolean;
  readonly durableAtLanding?: boolean;
  readonly offsetsOutsideTransaction?: boolean;
  readonly syncAnswerSkipsAttempts?: boolean;
  readonly unfencedProducer?: boolean;
  readonly changelogGaps?: boolean;
  readonly resetKeepsLocalState?: boolean;
  readonly skipRunJournal?: boolean;
  readonly pruneAheadOfCommit?: boolean;
}

/** The share of the model's answers, and of the effect's, that come synchronously. */
const SYNC_SHARE = 0.5;
/** The share of effect calls that fail once (then succeed), with two attempts or more. */
const EFFECT_FAILURE_SHARE = 0.15;
/** The share of the durable steps' tool calls that fail once per event, with two attempts or more. */
const TOOL_FAILURE_SHARE = 0.1;

type ScenarioValue = { n: number; poison: boolean };
type ScenarioDecisionValue = { ok: true; n: number };

const ScenarioDecision = checkedSchema<ScenarioDecisionValue>('orderly-crash-scenario', (value) => {
  const decision = asObject(value);
  return decision?.ok === true && typeof decision.n === 'number' ? [] : [`a decision is { ok: true, n: number }, got ${JSON.stringify(value)}`];
});

/**
 * Runs a scenario on the test driver: pipes the stream, applies each crash and its restart, lets
 * the run heal and settle, then resolves every parked key until none is left. Returns the driver
 * for the invariants to read; the caller closes it. It runs orderly's own fixed topology (its crash
 * suite); to test yours, use `topologyProperty`.
 */
export async function runCrashScenario(scenario: CrashScenario, options: { stateDir?: string } & ScenarioFaults = {}): Promise<ScenarioRun> {
  const model = fakeModel<ScenarioValue, ScenarioDecisionValue>({
    latencyMs: scenario.model.latencyMs,
    ...(scenario.model.limit ? { limit: scenario.model.limit } : {}),
    poison: (e) => e.poison,
    decide: (e) => ({ ok: true, n: e.n }),
    seed: scenario.seed,
    syncShare: SYNC_SHARE,
  });
  let driver: TopologyTestDriver | undefined;
  const tool = scenarioTool(scenario, () => driver!);
  const decide = withDurableSteps(scenario.runSteps ?? 0, options.ignoreRetryAfter ? deafToRetryAfter(model.decide) : model.decide, tool.call);
  const fx = scenarioEffect(scenario);
  const keyed = stream<ScenarioValue>('in').keyedSerial({ maxInFlight: scenario.maxInFlight });
  const classified =
    scenario.steps === 2
      ? keyed
          .agentStep('classify', scenarioClassifier(scenario), { schema: ScenarioKind })
          .park({ attempts: scenario.attempts, retryDelayMs: scenario.retryDelayMs })
          .mapValues(({ event }) => event)
      : keyed;
  const topology = classified
    .agentStep('decide', decide, { schema: ScenarioDecision, ...(scenario.model.declareLimit && scenario.model.limit ? { limit: scenario.model.limit } : {}) })
    .park({ attempts: scenario.attempts, retryDelayMs: scenario.retryDelayMs })
    .applyOnce(fx)
    .to('out')
    .build();
  const faults = {
    ...(options.commitAheadBy ? { commitAheadBy: options.commitAheadBy } : {}),
    ...(options.metadataListsUnfinished ? { metadataListsUnfinished: true } : {}),
    ...(options.splitEffectBatch ? { splitEffectBatch: options.splitEffectBatch } : {}),
    ...(options.durableAtLanding ? { durableAtLanding: true } : {}),
    ...(options.offsetsOutsideTransaction ? { offsetsOutsideTransaction: true } : {}),
    ...(options.unfencedProducer ? { unfencedProducer: true } : {}),
    ...(options.changelogGaps ? { changelogGaps: true } : {}),
    ...(options.resetKeepsLocalState ? { resetKeepsLocalState: true } : {}),
    ...(options.skipRunJournal ? { skipRunJournal: true } : {}),
    ...(options.pruneAheadOfCommit ? { pruneAheadOfCommit: true } : {}),
    ...(options.syncAnswerSkipsAttempts ? { dropWrite: (op: StoreOp) => isAttemptsAfterSyncAnswer(op, model) } : {}),
  };
  driver = new TopologyTestDriver(topology, {
    partitions: scenario.partitions,
    seed: scenario.seed,
    commit: scenario.commit,
    mode: scenario.mode ?? 'plain',
    ...(scenario.effectRingSize ? { effectRingSize: scenario.effectRingSize } : {}),
    ...(scenario.restoreMs && scenario.restoreMs.length > 0 ? { restoreMs: restoreMsOf(scenario.restoreMs) } : {}),
    ...(options.stateDir ? { stateDir: options.stateDir } : {}),
    ...(Object.keys(faults).length > 0 ? { faults } : {}),
  });
  const input = driver.createInputTopic<ScenarioValue>('in');
  const placed = scenario.events.map((e, n) => ({ ...e, offset: input.pipeInput(e.key, { n, poison: e.poison }, { partition: e.partition }).offset }));
  const numberAt = new Map(placed.map((e, n) => [`${e.partition}/${e.offset}`, n]));
  const stateViolations: InvariantViolation[] = [];
  const checkState = async () => {
    // One report is enough: a state that went wrong stays wrong.
    if (stateViolations.length === 0) stateViolations.push(...(await checkStateMatchesEffects(driver, 'fx', (p, o) => numberAt.get(`${p}/${o}`))));
  };
  for (const crash of scenario.crashes) await applyFault(driver, scenario.partitions, crash, checkState);
  await driver.runUntilIdle();
  const beforeResolutions = driver.history().length;
  const kinds = scenario.resolutions;
  await resolveAllParked(driver, {
    resolutionFor: (_, turn) => ((kinds[turn % Math.max(1, kinds.length)] ?? 'decision') === 'discard' ? { discard: true } : { decision: { ok: true, n: -1 } }),
    ...(scenario.replayCrash ? { replayCrash: scenario.replayCrash } : {}),
    afterCrash: checkState,
    caller: 'runCrashScenario',
  });
  await checkState();
  stateViolations.push(...(await checkNothingLeftBehind(driver)));
  return { scenario, driver, placed, beforeResolutions, model, stateViolations, toolRuns: tool.runs };
}

/** Kinds of state an event keeps only until it ends: attempts, run journals, parked keys, held events and their index. */
const ENDED_WITH_THEIR_EVENT = ['attempts/', 'run/', 'parked/', 'held/', 'heldid/'] as const;

/**
 * Once every event has ended and every key is resolved, the state holds none of the records that
 * live only as long as their event (a state that grows with every event ever seen is unbounded).
 */
async function checkNothingLeftBehind(driver: TopologyTestDriver): Promise<InvariantViolation[]> {
  const found: InvariantViolation[] = [];
  for (const prefix of ENDED_WITH_THEIR_EVENT) {
    const left = await driver.storedEntries(prefix);
    if (left.length > 0)
      found.push({ invariant: 'state-left-behind', detail: `${left.length} ${prefix} record(s) outlived their events, first ${left[0]![0]}` });
  }
  return found;
}

type EffectInput = { event: ScenarioValue; decision: ScenarioDecisionValue };

type ScenarioKindValue = { kind: 'even' | 'odd' };
const ScenarioKind = checkedSchema<ScenarioKindValue>('orderly-crash-scenario-kind', (value) => {
  const kind = asObject(value)?.kind;
  return kind === 'even' || kind === 'odd' ? [] : [`a classification is { kind: 'even' | 'odd' }, got ${JSON.stringify(value)}`];
});

/**
 * The first step of a two-step scenario: it answers synchronously or asynchronously at random per
 * call, and fails an event's first attempt now and then when the park allows more than one.
 */
function scenarioClassifier(scenario: CrashScenario): DecideFn<ScenarioValue, ScenarioKindValue> {
  const random = new SeededRandom(scenario.seed).derive('classify');
  const failedOnce = new Set<string>();
  return (event, { effectId }) => {
    const sync = random.next() < SYNC_SHARE;
    const fail = scenario.attempts > 1 && !failedOnce.has(effectId) && random.next() < EFFECT_FAILURE_SHARE;
    const answer = (): ScenarioKindValue => {
      if (fail) {
        // orderly-allow: state-outside-store the harness fails each event once, across restarts of its driver
        failedOnce.add(effectId);
        throw new Error(`classify is down for ${effectId} (a fault of the scenario, once per event)`);
      }
      return { kind: event.n % 2 === 0 ? 'even' : 'odd' };
    };
    return sync ? answer() : Promise.resolve().then(answer);
  };
}

/**
 * The scenario's effect: it appends each event to its key's row (applied twice, an event would
 * show twice), answering synchronously or asynchronously at random per call, and failing once
 * now and then (retried with its decision kept) when the park allows more than one attempt.
 */
function scenarioEffect(scenario: CrashScenario) {
  const random = new SeededRandom(scenario.seed).derive('effect');
  const failedOnce = new Set<string>();
  return effect<EffectInput, EffectInput>('fx', (v, { state, key, effectId, decisions }) => {
    if (scenario.steps === 2 && decisions.classify === undefined) throw new Error(`the effect of ${effectId} did not see the classify step's decision`);
    const sync = random.next() < SYNC_SHARE;
    const fail = scenario.attempts > 1 && !failedOnce.has(effectId) && random.next() < EFFECT_FAILURE_SHARE;
    const apply = () => {
      if (fail) {
        // orderly-allow: state-outside-store the harness fails each event once, across restarts of its driver
        failedOnce.add(effectId);
        throw new Error(`the outside system is down for ${effectId} (a fault of the scenario, once per event)`);
      }
      const row = String(key);
      state.put(row, { applied: [...(state.get<AppliedRow>(row)?.applied ?? []), v.event.n] } satisfies AppliedRow);
      return v;
    };
    return sync ? apply() : Promise.resolve().then(apply);
  });
}

type ToolResult = { effectId: string; step: string };

/**
 * The outside system the durable steps call: it answers at once or after a random latency,
 * fails once per event now and then (when the park allows a second attempt), counts its runs by
 * event and step, and tells the driver of each run as it begins.
 */
function scenarioTool(scenario: CrashScenario, driverOf: () => TopologyTestDriver) {
  const random = new SeededRandom(scenario.seed).derive('tool');
  const failedOnce = new Set<string>();
  const runs = new Map<string, number>();
  const call = (ctx: DecideContext, step: DurableStepContext): ToolResult | Promise<ToolResult> => {
    const id = `${step.effectId} ${step.step}`;
    runs.set(id, (runs.get(id) ?? 0) + 1);
    driverOf().stepRan(ctx, 'decide', step.step);
    const sync = random.next() < SYNC_SHARE;
    const latencyMs = Math.floor(random.next() * 3_000);
    const fail = scenario.attempts > 1 && !failedOnce.has(step.effectId) && random.next() < TOOL_FAILURE_SHARE;
    const answer = (): ToolResult => {
      if (fail) {
        failedOnce.add(step.effectId);
        throw new Error(`the tool is down for ${id} (a fault of the scenario, once per event)`);
      }
      return { effectId: step.effectId, step: step.step };
    };
    return sync ? answer() : sleep(ctx.clock, latencyMs, step.signal).then(answer);
  };
  return { call, runs };
}

/**
 * The 'decide' step with `count` durable steps after the model's answer, each checking that it got
 * its own result back (a journaled one too): a wrong one fails the attempt, and the event is lost
 * or parked, which the invariants report.
 */
function withDurableSteps(
  count: number,
  decide: DecideFn<ScenarioValue, ScenarioDecisionValue>,
  tool: (ctx: DecideContext, step: DurableStepContext) => ToolResult | Promise<ToolResult>,
): DecideFn<ScenarioValue, ScenarioDecisionValue> {
  if (count === 0) return decide;
  const steps = async (decision: ScenarioDecisionValue, ctx: DecideContext): Promise<ScenarioDecisionValue> => {
    for (let i = 1; i <= count; i++) {
      const name = `tool-${i}`;
      const result = await ctx.step(name, (step) => tool(ctx, step));
      if (result.effectId !== ctx.effectId || result.step !== name)
        throw new Error(`durable step '${name}' of ${ctx.effectId} returned ${JSON.stringify(result)}, not its own result`);
    }
    return decision;
  };
  return (event, ctx) => {
    const answer = decide(event, ctx);
    return isThenable(answer) ? Promise.resolve(answer).then((decision) => steps(decision, ctx)) : steps(answer, ctx);
  };
}

/** An attempts record of an event whose last answer from the model came synchronously. */
function isAttemptsAfterSyncAnswer(op: StoreOp, model: FakeModel<ScenarioValue, ScenarioDecisionValue>): boolean {
  if (op.type !== 'put' || !op.key.startsWith('attempts/')) return false;
  const { store, topic, partition, rest } = stateKeys.parse(op.key);
  // The step's records only: the effect keeps its own attempts too.
  if (store !== attemptsStoreOf('decide')) return false;
  return model.lastCall(`${topic}/${partition}/${Number(rest)}`)?.sync === true;
}

/** The step as an engine that ignores Retry-After sees it: every 429 says "retry now". */
function deafToRetryAfter(decide: DecideFn<ScenarioValue, ScenarioDecisionValue>): DecideFn<ScenarioValue, ScenarioDecisionValue> {
  const deaf = (error: unknown) => {
    throw isRateLimited(error) ? new RateLimited(0) : error;
  };
  return (event, ctx) => {
    try {
      const answer = decide(event, ctx);
      return isThenable(answer) ? Promise.resolve(answer).catch(deaf) : answer;
    } catch (error) {
      return deaf(error);
    }
  };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}
