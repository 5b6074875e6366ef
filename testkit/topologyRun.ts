import type { Topology } from '../src/dsl/topology.js';
import type { CommitPolicy } from '../src/engine/engine.js';
import type { Resolution } from '../src/engine/parkedKeys.js';
import type { CallLimit, DecideContext, DecideFn } from '../src/graph/nodes.js';
import { nearest } from '../src/graph/optionNames.js';
import { TopologyTestDriver, type DriverFaults, type DriverMode } from './driver.js';
import { fakeModel, type FakeModel } from './fakeModel.js';
import { applyFault, resolveAllParked, type ReplayCrash, type ScenarioCrash } from './faultSchedule.js';
import type { TestRecord } from './topics.js';

/** One input event of a property: a key and a value of the user's own type, and optionally its partition. */
export interface TopologyEvent<T> {
  readonly key: string | null;
  readonly value: T;
  /** @defaultValue Kafka's default partitioner over the key, as a producer would choose */
  readonly partition?: number;
}

/** An input event as it was placed on the source topic. */
export interface PlacedEvent<T> extends TopologyEvent<T> {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/** Gives the topology builder the decide function of each agent step: the fake model, standing in for the provider. */
export type StepDecide = <T = unknown, D = unknown>(step: string) => DecideFn<T, D>;

/** Builds the user's topology around the decide functions it is given. Called once per run. */
export type TopologyBuilder = (decide: StepDecide) => Topology;

/**
 * The fake model that stands in for the provider behind every agent step: the decisions it gives
 * (the user's own, per step) and how it behaves. Each step gets its own fake model (own budget).
 */
export interface ModelStandIn {
  /** The decision for an event at a step (its name in `ctx.agentStep`): what a well-behaved model would answer. */
  decide(event: unknown, ctx: DecideContext & { readonly agentStep: string }): unknown;
  /** Events whose answer never validates (poison): the model answers `poisonDecision` for them. */
  poison?(event: unknown, step: string): boolean;
  /** @defaultValue `{ unparseable: true }` */
  poisonDecision?: unknown;
  /** Virtual ms an accepted call takes, drawn per run between the two bounds. @defaultValue `{ min: 0, max: 5000 }` */
  latencyMs?: number | { readonly min: number; readonly max: number };
  /**
   * The provider's limit: `'declared'` enforces what each step declares (`agentStep(..., { limit })`),
   * so a 429 is a breach of the declared limit; `'none'` refuses nothing; a limit enforces that
   * one (a step that declares none must learn it from the 429s). @defaultValue 'declared'
   */
  limit?: 'declared' | 'none' | CallLimit;
  /** The share of accepted calls that throw (a failed attempt), drawn from the run's seed. @defaultValue 0 */
  failureShare?: number;
  /** The share of calls answered synchronously. @defaultValue 0.5 */
  syncShare?: number;
}

/** How a parked key is resolved, in turn; `decision` asks {@link ResolutionOptions.decision}. */
export type ResolutionKind = 'decision' | 'discard' | 'retry';

/** One run's input: what the property's arbitrary draws, and what a failure prints (shrunk). */
export interface TopologyRunInput<T> {
  readonly mode: DriverMode;
  readonly partitions: number;
  readonly commit: CommitPolicy;
  readonly events: readonly TopologyEvent<T>[];
  /** The faults, in order, each after the previous one healed. */
  readonly crashes: readonly ScenarioCrash[];
  /** How each parked key is resolved, in turn (cycled). Empty: parked keys stay parked. */
  readonly resolutions: readonly ResolutionKind[];
  readonly replayCrash?: ReplayCrash;
  readonly model: { readonly latencyMs: number; readonly failureShare: number };
  /**
   * How long each partition's restore takes, in virtual ms: partition `p` takes
   * `restoreMs[p % restoreMs.length]` (see DriverOptions.restoreMs). Absent: no restores.
   */
  readonly restoreMs?: readonly number[];
  readonly seed: number;
}

/** Everything a run left behind: what the invariants and the user's own properties read. */
export interface TopologyRun<T> {
  readonly input: TopologyRunInput<T>;
  readonly topology: Topology;
  /** The driver, for its observations (effects, history, commits, ...); closed after the checks. */
  readonly driver: TopologyTestDriver;
  /** Every input event where it landed, in piping order. */
  readonly placed: readonly PlacedEvent<T>[];
  /** The fake model of each agent step, by step name. */
  readonly models: ReadonlyMap<string, FakeModel<unknown, unknown>>;
  /** Every record of every topic the topology writes (outputs, parking, dead letters), in append order, decoded as JSON where it is JSON. */
  readonly outputs: ReadonlyMap<string, readonly TestRecord<unknown>[]>;
  /** The provider limit each step's fake model enforced. */
  readonly limits: ReadonlyMap<string, CallLimit>;
  /** Whether parked keys were resolved at the end (`input.resolutions` not empty). */
  readonly resolved: boolean;
}

/** What a run needs besides its input. */
export interface RunSettings<T> {
  readonly topology: TopologyBuilder;
  readonly model: ModelStandIn;
  /** The decision a `decision` resolution gives a parked event, from its decoded value. */
  readonly resolutionDecision?: (parked: { key: string | null; value: T; partition: number; offset: number; step: string }) => unknown;
  readonly stateDir?: string;
  readonly faults?: DriverFaults;
}

/**
 * Runs one input on a fresh driver: builds the topology around fake models, pipes the events,
 * applies each fault and its restart, lets the run settle, then resolves every parked key as the
 * input says. The caller closes `run.driver`.
 */
export async function runTopology<T>(input: TopologyRunInput<T>, settings: RunSettings<T>): Promise<TopologyRun<T>> {
  const models = new Map<string, FakeModel<unknown, unknown>>();
  const limits = new Map<string, CallLimit>();
  let built: Topology | undefined;
  const modelOf = (step: string): FakeModel<unknown, unknown> => {
    let model = models.get(step);
    if (!model) {
      if (!built)
        throw new Error(`topologyProperty: the decide function of step '${step}' was called while the topology was being built; call it only from the engine`);
      const limit = providerLimit(settings.model.limit ?? 'declared', built, step);
      if (limit) limits.set(step, limit);
      const stand = settings.model;
      model = fakeModel<unknown, unknown>({
        latencyMs: input.model.latencyMs,
        ...(limit ? { limit } : {}),
        ...(stand.poison ? { poison: (event) => stand.poison!(event, step) } : {}),
        ...(stand.poisonDecision !== undefined ? { poisonDecision: stand.poisonDecision } : {}),
        decide: (event, ctx) => stand.decide(event, { ...ctx, agentStep: step }),
        seed: input.seed ^ hash(step),
        syncShare: stand.syncShare ?? 0.5,
        failureShare: input.model.failureShare,
      });
      models.set(step, model);
    }
    return model;
  };
  const asked = new Set<string>();
  const decide = ((step: string): DecideFn<unknown, unknown> => {
    asked.add(step);
    return (event, ctx) => modelOf(step).decide(event, ctx);
  }) as StepDecide;
  built = settings.topology(decide);
  const topology = built;
  requireStepsPaired(topology, asked);
  // Every step gets its model now, so that its stats exist even if it is never called.
  for (const node of topology.nodes) if (node.kind === 'agentStep') modelOf(node.name);
  const driver = new TopologyTestDriver(topology, {
    partitions: input.partitions,
    seed: input.seed,
    commit: input.commit,
    mode: input.mode,
    ...(input.restoreMs && input.restoreMs.length > 0 ? { restoreMs: restoreMsOf(input.restoreMs) } : {}),
    ...(settings.stateDir ? { stateDir: settings.stateDir } : {}),
    ...(settings.faults ? { faults: settings.faults } : {}),
  });
  const source = topology.source;
  const topic = driver.createInputTopic<T>(source.topic, { value: source.value as never });
  const placed = input.events.map((e): PlacedEvent<T> => {
    const at = topic.pipeInput(e.key, e.value, e.partition !== undefined ? { partition: e.partition % input.partitions } : {});
    return { ...e, topic: source.topic, partition: at.partition, offset: at.offset };
  });
  const nothing = async () => undefined;
  const resolved = input.resolutions.length > 0;
  try {
    for (const crash of input.crashes) await applyFault(driver, input.partitions, crash, nothing);
    await driver.runUntilIdle();
    if (resolved) {
      await resolveAllParked(driver, {
        resolutionFor: (parked, turn) => resolutionOf(input.resolutions[turn % input.resolutions.length]!, driver, parked.partition, parked.lane, settings),
        ...(input.replayCrash ? { replayCrash: input.replayCrash } : {}),
        afterCrash: nothing,
        caller: 'topologyProperty',
      });
    }
  } catch (error) {
    // A failed run hands no driver back: it is closed here (shrinking runs many).
    await driver.close().catch(() => undefined);
    throw error;
  }
  const outputs = new Map(topology.outputTopics.map((name) => [name, readAll(driver, name)]));
  return { input, topology, driver, placed, models, outputs, limits, resolved };
}

function resolutionOf<T>(kind: ResolutionKind, driver: TopologyTestDriver, partition: number, lane: string, settings: RunSettings<T>): Resolution {
  if (kind === 'discard') return { discard: true };
  if (kind === 'retry') return { retry: true };
  const decide = settings.resolutionDecision;
  if (!decide) throw new Error("topologyProperty: a 'decision' resolution needs resolutions.decision, the decision a person gives a parked event");
  const head = driver.parkedHead(partition, lane);
  const bytes = head.event.valueBase64 === null ? null : Buffer.from(head.event.valueBase64, 'base64');
  // The source's serde decodes the user's own value type.
  const value = (bytes === null ? null : driver.topology.source.value.deserialize(bytes)) as T;
  return { decision: decide({ key: head.event.key, value, partition: head.event.partition, offset: head.event.offset, step: head.step }) };
}

/** What the fake provider behind a step enforces. */
function providerLimit(limit: NonNullable<ModelStandIn['limit']>, topology: Topology, step: string): CallLimit | undefined {
  if (limit === 'none') return undefined;
  if (limit !== 'declared') return limit;
  const node = topology.nodes.find((n) => n.kind === 'agentStep' && n.name === step);
  // The stand-in counts calls: a step's declared limit on tokens alone enforces nothing.
  const declared = node?.kind === 'agentStep' ? node.limit : undefined;
  return declared?.calls !== undefined ? { calls: declared.calls, windowMs: declared.windowMs } : undefined;
}

/** A topic's records, JSON-decoded where they are JSON, raw text where not (the driver's default). */
function readAll(driver: TopologyTestDriver, topic: string): TestRecord<unknown>[] {
  return driver.createOutputTopic<unknown>(topic).readRecordsToList();
}

function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h | 0;
}

/** Each partition's restore, from a drawn list cycled over the partitions. */
export function restoreMsOf(list: readonly number[]): (partition: number) => number {
  return (partition) => list[partition % list.length]!;
}

/**
 * A name the builder asked decide() for that is no agent step, while a step went without its own:
 * a misspelt name (its step's calls would reach no fake model of the harness). A builder that
 * asks for decide() lazily, inside the step, or for a step a variant leaves out, is not refused.
 */
function requireStepsPaired(topology: Topology, asked: ReadonlySet<string>): void {
  const steps = topology.nodes.filter((n) => n.kind === 'agentStep').map((n) => n.name);
  const unpaired = steps.filter((step) => !asked.has(step));
  if (unpaired.length === 0) return;
  for (const name of asked) {
    if (steps.includes(name)) continue;
    const near = nearest(name, unpaired);
    throw new Error(
      `topologyProperty: the builder asked for decide('${name}'), and the topology has no agent step '${name}'${near ? ` (did you mean '${near}'?)` : ''}; its agent steps: ${steps.map((s) => `'${s}'`).join(', ')}. Give each step decide(<its own name>)`,
    );
  }
}
