import type { StandardSchemaV1 } from '@standard-schema/spec';
import type {
  Decided,
  DecideFn,
  Decisions,
  Disposition,
  EffectIdContext,
  GraphNode,
  HandlerFn,
  ProcessorNode,
  RateLimit,
  RuleFn,
  SourceNode,
} from '../graph/nodes.js';
import type { Effect } from '../graph/effect.js';
import { json, type Serde } from '../graph/serde.js';
import { Topology } from '../graph/topology.js';
import { isEffect } from './effect.js';
import { shown } from '../graph/shown.js';
import { requireFunction, requireInteger, requireKnownOptions, requireName, requireNumber } from './options.js';
import { sameJson } from './sameJson.js';
import { validateTopology } from './validateTopology.js';
import { TopologyError } from './topologyError.js';

/** Options of {@link stream}. */
export interface StreamOptions<T> {
  /** How values are decoded. @defaultValue `json()` */
  value?: Serde<T>;
  /** Where undecodable records go, with their error. @defaultValue `<topic>.dlq` */
  deadLetterTopic?: string;
  /**
   * The id under which an event's effect is recorded. @defaultValue `topic/partition/offset`.
   * Declare one (an order id, a dispute id) when the same event may be written to the log twice.
   */
  effectId?: (ctx: EffectIdContext<T>) => string;
}

export interface NameOption {
  /** The operator's name in `describe()`; stateful operators name their stores after it. */
  name?: string;
}

export interface KeyedSerialOptions extends NameOption {
  /** Events in flight per partition, never two of one key. @defaultValue 1 */
  maxInFlight?: number;
}

export interface AgentStepOptions<S extends StandardSchemaV1 | undefined> {
  /** Every decision is validated against it (any Standard Schema: zod, valibot, arktype, ...). */
  schema?: S;
  /**
   * The provider's limit, if known: calls, tokens or both per window. The engine then paces calls
   * so that none is refused: by count, and by each call's expected and then reported tokens.
   */
  limit?: RateLimit;
  /**
   * A call still unsettled after this long is aborted through `ctx.signal` and counts as a failed
   * attempt: a hung call releases its slot and its key. @defaultValue no timeout (a model call's
   * time varies too much by model and prompt for one default to fit; set one for production)
   */
  timeoutMs?: number;
}

/** Options of {@link StreamBuilder.applyOnce}. */
export interface ApplyOnceOptions extends NameOption {
  /**
   * How long the record of a declared effect id (`stream(topic, { effectId })`) is kept after its
   * effect was applied: an event with the same id that comes within it is a DUPLICATE, one that
   * comes after it is applied again. Pruned past it (docs/guarantees.md, "How long effect records
   * are kept"). Ids derived from offsets (the default) need no window: their records are pruned
   * once the committed offset is past them. @defaultValue 604800000 (7 days)
   */
  idRetentionMs?: number;
}

export interface ParkOptions extends NameOption {
  /**
   * The park's name, which names its state; no other operator may have it (an effect included).
   * @defaultValue `<step>-park`, after the agentStep before it
   */
  name?: string;
  /** Attempts before the event is parked (a 429 is not an attempt). */
  attempts: number;
  /** Wait between failed attempts. @defaultValue 1000 */
  retryDelayMs?: number;
  /** Spread each wait by up to this share of it, at random. @defaultValue 0 */
  retryJitter?: number;
  /** Where park records go. @defaultValue `<source topic>.parked` */
  topic?: string;
  /**
   * What becomes of an event whose attempts ran out. `'park'`: parked, its key held behind it.
   * `'dlq'`: written to the stream's dead-letter topic with its errors, and the later events of its
   * key go on, so per-key order is broken. `'skip'`: committed past with no effect, counted as
   * SKIPPED and logged. `'fail'`: the worker stops with an error naming the operator and the event,
   * committing nothing past it. @defaultValue `'park'`
   */
  onExhausted?: Disposition;
}

const dispositions: readonly Disposition[] = ['park', 'dlq', 'skip', 'fail'];

export interface RespondOptions extends NameOption {
  /** Where `ctx.status(update)` publishes. @defaultValue `<source topic>.status` */
  statusTopic?: string;
}

export interface ToOptions<T> extends NameOption {
  /** How values are encoded. @defaultValue `json()` */
  value?: Serde<T>;
}

/** Options of {@link StreamBuilder.shadow}. */
export interface ShadowOptions<D = unknown> {
  /**
   * Whether the agent's decision agrees with the applied one (the handler's); a disagreement is
   * counted and reported by key. @defaultValue equal as JSON (object keys in any order)
   */
  agrees?: (agent: D, applied: D) => boolean;
  /** Where the shadow records go; the shadows of several steps may share it. @defaultValue `<source topic>.shadow` */
  topic?: string;
  /**
   * How long (on the engine's clock) an event's applied decision may wait for the agent: its rate
   * gate, its 429s' Retry-After, its calls and retries. Past it the agent's part ends, the handler
   * decides, and the shadow record carries `agentError`. Without it the agent's time is the
   * event's time: while the provider refuses every call, the handler's decisions wait with it.
   * @defaultValue no bound
   */
  maxWaitMs?: number;
}

/** Options of {@link StreamBuilder.fallback}. */
export interface FallbackOptions {
  /**
   * How long the agent step's calls must have failed (thrown, timed out) or been refused (429),
   * none answered, before its circuit opens and the handler decides. An answer its schema refuses
   * counts as an answer: the step is up, that event is poison. An event whose attempts run out
   * before then is parked, unless another event's calls failed too since the step last answered:
   * then the handler decides it at once.
   */
  afterMs: number;
  /** How long the circuit stays open before one call probes the step again. @defaultValue `afterMs` */
  halfOpenAfterMs?: number;
}

/** The decisions before the first agent step: none. */
export type NoDecisions = Readonly<Record<never, never>>;

type DecisionOf<S, D> = S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : D;
/** The event an agent step decided, in the `{ event, decision }` it passes on. */
type EventOf<T> = T extends Decided<infer E, unknown> ? E : never;
/** The decision an agent step passes on. */
type DecisionIn<T> = T extends Decided<unknown, infer D> ? D : never;

/**
 * An immutable handle on a stream being declared. Every operator checks its arguments, adds one
 * node and returns a new handle; `build()` validates the whole chain and returns a {@link Topology}.
 */
export class StreamBuilder<T, Ds extends Decisions = NoDecisions> {
  /** @internal */
  constructor(
    private readonly source: SourceNode,
    private readonly nodes: readonly ProcessorNode[],
  ) {}

  /** Keeps the events for which `predicate` holds; the others finish as FILTERED. Stateless. */
  filter(predicate: (value: T, key: string | null) => boolean, options: NameOption = {}): StreamBuilder<T, Ds> {
    requireFunction('filter', 'its predicate', predicate);
    requireKnownOptions('filter', options, ['name']);
    const name = options.name ?? `filter-${this.count('filter') + 1}`;
    return this.with({ kind: 'filter', name, predicate: predicate as (v: unknown, k: string | null) => boolean });
  }

  /** Replaces each value by `mapper(value, key)`. Stateless. */
  mapValues<U>(mapper: (value: T, key: string | null) => U, options: NameOption = {}): StreamBuilder<U, Ds> {
    requireFunction('mapValues', 'its mapper', mapper);
    requireKnownOptions('mapValues', options, ['name']);
    const name = options.name ?? `map-values-${this.count('mapValues') + 1}`;
    return this.with({ kind: 'mapValues', name, mapper: mapper as (v: unknown, k: string | null) => unknown });
  }

  /**
   * Runs events of different keys in parallel and events of one key one after another, in log
   * order: per partition at most `maxInFlight` events in flight, never two of one key.
   * Required upstream of {@link StreamBuilder.agentStep}.
   */
  keyedSerial(options: KeyedSerialOptions = {}): StreamBuilder<T, Ds> {
    requireKnownOptions('keyedSerial', options, ['maxInFlight', 'name']);
    const maxInFlight = requireInteger('keyedSerial', 'maxInFlight', options.maxInFlight ?? 1, 1);
    const name = options.name ?? `${this.source.topic}-keyed-serial`;
    return this.with({ kind: 'keyedSerial', name, maxInFlight });
  }

  /**
   * Decides routine events by a deterministic `rule` before the agent step that follows: a decision
   * the rule returns is validated against the step's schema and passed on as the step's, marked
   * `decidedBy: 'rule'`, and the step makes no call; `undefined` leaves the event to the step.
   * Stateless. Put it right before `.agentStep()`; several routes in a row are asked in order. A
   * rule that throws, or returns a decision the schema refuses, parks its event at once.
   *
   * @example
   * stream<Dispute>('disputes').keyedSerial({ maxInFlight: 3 })
   *   .route('small-refunds', (d) => (d.amount <= 50 ? { action: 'refund', rationale: 'small amount' } : undefined))
   *   .agentStep('decide', decide, { schema: Decision })
   *   .park({ attempts: 3 })
   *   .applyOnce(effects)
   */
  route<D>(name: string, rule: RuleFn<T, D, Ds>): StreamBuilder<T, Ds> {
    requireName('route', 'its name', name);
    requireFunction(`route '${name}'`, 'its rule', rule);
    return this.with({ kind: 'route', name, rule: rule as RuleFn<unknown, unknown> });
  }

  /**
   * Asks `decide` (a model call) for a decision on each event. `decide` returns a decision and
   * nothing else: the engine validates it against `schema`, then applies it downstream or, after
   * the attempts of the `park()` that follows, parks the event. Throw {@link RateLimited} for a 429.
   * Stateful: its attempts are kept in the store, under its name. Like every function given to
   * the builder, `decide` is called alone (`this` undefined): pass a method bound
   * (`scorer.decide.bind(scorer)`) or in an arrow.
   *
   * @example
   * stream('disputes').keyedSerial({ maxInFlight: 3 })
   *   .agentStep('decide', decide, { schema: Decision })
   *   .park({ attempts: 3 })
   *   .applyOnce(effects)
   */
  agentStep<N extends string, D, S extends StandardSchemaV1 | undefined = undefined>(
    name: N,
    decide: DecideFn<T, D, Ds>,
    options: AgentStepOptions<S> = {},
  ): StreamBuilder<Decided<T, DecisionOf<S, D>>, Ds & { readonly [K in N]: DecisionOf<S, D> }> {
    requireName('agentStep', 'its name', name);
    requireFunction(`agentStep '${name}'`, 'decide', decide);
    requireKnownOptions(`agentStep '${name}'`, options, ['schema', 'limit', 'timeoutMs']);
    if (options.schema !== undefined && typeof options.schema?.['~standard']?.validate !== 'function') {
      throw new TopologyError(`agentStep '${name}'`, `agentStep '${name}': schema must be a Standard Schema (zod, valibot, arktype, ...)`);
    }
    const limit = options.limit && checkLimit(name, options.limit);
    const timeoutMs = options.timeoutMs === undefined ? undefined : requireInteger(`agentStep '${name}'`, 'timeoutMs', options.timeoutMs, 1);
    return this.with<Decided<T, DecisionOf<S, D>>, Ds & { readonly [K in N]: DecisionOf<S, D> }>({
      kind: 'agentStep',
      name,
      decide: decide as DecideFn<unknown, unknown>,
      ...(options.schema ? { schema: options.schema } : {}),
      ...(limit ? { limit } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    });
  }

  /**
   * After `attempts` failed attempts of the step before it, parks the event: a park record goes
   * to the parking topic and its key is held, so every later event of that key is parked behind
   * it, in order, while other keys go on. A resolved key replays in order. Stateful.
   * `onExhausted` chooses another end for such an event: dead-lettered, skipped, or the worker
   * stopped.
   */
  park(options: ParkOptions): StreamBuilder<T, Ds> {
    const step = this.lastAgentStep();
    const operator = step ? `park after '${step}'` : 'park';
    requireKnownOptions(operator, options, ['attempts', 'retryDelayMs', 'retryJitter', 'topic', 'onExhausted', 'name']);
    const attempts = requireInteger(operator, 'attempts', options?.attempts, 1);
    const retryDelayMs = requireNumber(operator, 'retryDelayMs', options.retryDelayMs ?? 1_000, 0);
    const retryJitter = requireNumber(operator, 'retryJitter', options.retryJitter ?? 0, 0, 1);
    const topic = requireName(operator, 'topic', options.topic ?? `${this.source.topic}.parked`);
    const name = options.name ?? `${step ?? this.source.topic}-park`;
    const onExhausted = options.onExhausted ?? 'park';
    if (!dispositions.includes(onExhausted)) {
      throw new TopologyError(operator, `${operator}: onExhausted must be one of ${dispositions.map((d) => `'${d}'`).join(', ')}, got ${shown(onExhausted)}`);
    }
    return this.with({ kind: 'park', name, attempts, retryDelayMs, retryJitter, topic, onExhausted });
  }

  /**
   * Runs the agent step before it in shadow: the agent decides, and `handler` (the code the agent
   * is to replace) decides what is applied, marked `decidedBy: 'rule'`. For each event the agent
   * decided, a shadow record (the agent's decision or its error, the applied decision, whether they
   * agree) goes to the shadow topic with the event's end; a disagreement is reported by key
   * (observer `shadowDisagreed`) and counted (`orderly_shadow_disagreements_total`). No agent
   * decision is ever applied, and an event whose agent attempts run out is not parked: the handler
   * decides it all the same. Events a route decided are left as they are. Put it right after the
   * step's `.park()`. `maxWaitMs` bounds how long the applied decision waits for the agent (its
   * rate limit included).
   *
   * @example
   * .agentStep('decide', decide, { schema: Decision })
   * .park({ attempts: 3 })
   * .shadow('legacy-rules', (dispute) => legacyDecision(dispute), { agrees: (agent, applied) => agent.action === applied.action })
   * .applyOnce(effects)
   */
  shadow(name: string, handler: HandlerFn<EventOf<T>, DecisionIn<T>>, options: ShadowOptions<DecisionIn<T>> = {}): StreamBuilder<T, Ds> {
    requireName('shadow', 'its name', name);
    const operator = `shadow '${name}'`;
    requireFunction(operator, 'its handler', handler);
    requireKnownOptions(operator, options, ['agrees', 'topic', 'maxWaitMs']);
    if (options.agrees !== undefined) requireFunction(operator, 'agrees', options.agrees);
    const topic = requireName(operator, 'topic', options.topic ?? `${this.source.topic}.shadow`);
    const agrees = (options.agrees ?? sameJson) as (agent: unknown, applied: unknown) => boolean;
    const maxWaitMs = options.maxWaitMs === undefined ? undefined : requireInteger(operator, 'maxWaitMs', options.maxWaitMs, 0);
    const step = this.guardedStep(operator, 'shadow', 'runs in shadow');
    return this.with({
      kind: 'shadow',
      name,
      step,
      handler: handler as HandlerFn<unknown, unknown>,
      agrees,
      topic,
      ...(maxWaitMs !== undefined ? { maxWaitMs } : {}),
    });
  }

  /**
   * Stands in for the agent step before it while that step is down: once its calls have failed
   * (thrown, timed out) or been refused (429), none answered, for `afterMs` (on the engine's clock), its circuit opens and
   * `handler` decides, marked `decidedBy: 'fallback'`: the events waiting for the step, and every
   * event after them. After `halfOpenAfterMs` one event's call probes the step (the others still
   * go to the handler); an answer closes the circuit, a failure or a 429 opens it again. The
   * circuit's state is reported (observer `circuit`, metric `orderly_circuit_state`). An event
   * whose attempts run out while the circuit is closed is parked (a poison event is not an
   * outage), unless another event's calls failed too since the step last answered: then the
   * handler decides it. The circuit opens at `afterMs` only while an event that failed waits at
   * the step; else at the next failure.
   * Put it right after the step's `.park()`.
   *
   * @example
   * .agentStep('decide', decide, { schema: Decision })
   * .park({ attempts: 3 })
   * .fallback('rules', (dispute) => ruleDecision(dispute), { afterMs: 30_000 })
   * .applyOnce(effects)
   */
  fallback(name: string, handler: HandlerFn<EventOf<T>, DecisionIn<T>>, options: FallbackOptions): StreamBuilder<T, Ds> {
    requireName('fallback', 'its name', name);
    const operator = `fallback '${name}'`;
    requireFunction(operator, 'its handler', handler);
    requireKnownOptions(operator, options, ['afterMs', 'halfOpenAfterMs']);
    const afterMs = requireInteger(operator, 'afterMs', options?.afterMs, 1);
    const halfOpenAfterMs = requireInteger(operator, 'halfOpenAfterMs', options?.halfOpenAfterMs ?? afterMs, 1);
    const step = this.guardedStep(operator, 'fallback', 'stands in for');
    return this.with({ kind: 'fallback', name, step, handler: handler as HandlerFn<unknown, unknown>, afterMs, halfOpenAfterMs });
  }

  /**
   * Applies `effect` once per event: its effect id is looked up before any model call, and the
   * effect's writes are recorded with the id in one atomic batch. Stateful: its store is named
   * after the effect. An effect record is pruned once it can no longer be needed: below the
   * committed offset (ids derived from offsets), or past `idRetentionMs` (declared ids).
   */
  applyOnce<R>(effect: Effect<T, R>, options: ApplyOnceOptions = {}): StreamBuilder<R, Ds> {
    if (!isEffect(effect)) throw new TopologyError('applyOnce', notAnEffect(effect));
    requireKnownOptions(`applyOnce '${effect.name}'`, options, ['name', 'idRetentionMs']);
    const name = requireName('applyOnce', 'its name', options.name ?? effect.name);
    const retention =
      options.idRetentionMs === undefined ? {} : { idRetentionMs: requireInteger(`applyOnce '${name}'`, 'idRetentionMs', options.idRetentionMs, 1) };
    return this.with({ kind: 'applyOnce', name, effect: effect as Effect<unknown, unknown>, ...retention });
  }

  /** Writes each value to `topic`, keyed as the input, and passes it on. */
  to(topic: string, options: ToOptions<T> = {}): StreamBuilder<T, Ds> {
    requireName('to', 'topic', topic);
    requireKnownOptions(`to '${topic}'`, options, ['value', 'name']);
    const value = (options.value ?? json<T>()) as Serde<unknown>;
    return this.with({ kind: 'sink', name: options.name ?? `${topic}-sink`, topic, value });
  }

  /**
   * Writes each event's final result to `topic` as a response record (docs/jobs.md): the value at
   * this point of the chain once the effect is applied, or `parked` / `failed` with the reason when
   * the event was parked, held behind a parked key, dead-lettered or skipped. Keyed like the event,
   * with its job id (header `orderly-job-id`, else its effect id). It also declares the status
   * topic that `ctx.status(update)` publishes to. Needs an agentStep upstream.
   */
  respond(topic: string, options: RespondOptions = {}): StreamBuilder<T, Ds> {
    requireName('respond', 'topic', topic);
    requireKnownOptions(`respond '${topic}'`, options, ['statusTopic', 'name']);
    const statusTopic = requireName('respond', 'statusTopic', options.statusTopic ?? `${this.source.topic}.status`);
    return this.with({ kind: 'respond', name: options.name ?? `${topic}-respond`, topic, statusTopic });
  }

  /** Validates the chain and compiles it. Throws a {@link TopologyError} naming the operator and the fix. */
  build(): Topology {
    const nodes: readonly GraphNode[] = [this.source, ...this.nodes];
    validateTopology(nodes);
    return new Topology(this.source, this.nodes);
  }

  private with<U, Ds2 extends Decisions = Ds>(node: ProcessorNode): StreamBuilder<U, Ds2> {
    return new StreamBuilder<U, Ds2>(this.source, [...this.nodes, node]);
  }

  private count(kind: ProcessorNode['kind']): number {
    return this.nodes.filter((n) => n.kind === kind).length;
  }

  /**
   * The agent step a shadow or fallback follows: the one whose park is the last node. Refuses
   * one with no step to guard, or placed anywhere but right after the step's park.
   */
  private guardedStep(operator: string, kind: 'shadow' | 'fallback', does: string): string {
    const step = this.lastAgentStep();
    if (step === undefined) {
      throw new TopologyError(
        operator,
        `${operator}: no agentStep before it, so there is no agent step it ${does}; put .${kind}() right after .agentStep(name, decide).park({ attempts })`,
      );
    }
    const guard = this.nodes.findLast((n) => (n.kind === 'shadow' || n.kind === 'fallback') && n.step === step);
    if (guard) {
      const why =
        guard.kind === kind
          ? `agentStep '${step}' already has ${kind} '${guard.name}'; remove one of the 2`
          : `agentStep '${step}' already has ${guard.kind} '${guard.name}', and a step runs either in shadow (its decisions never applied) or with a fallback (its decisions applied while it is up), not both; remove one`;
      throw new TopologyError(operator, `${operator}: ${why}`);
    }
    const last = this.nodes[this.nodes.length - 1]!;
    if (last.kind !== 'park') {
      throw new TopologyError(
        operator,
        `${operator}: it must come right after the park() of agentStep '${step}', but follows ${last.kind} '${last.name}'; put .${kind}() right after .agentStep(...).park(...)`,
      );
    }
    return step;
  }

  private lastAgentStep(): string | undefined {
    return this.nodes.findLast((n) => n.kind === 'agentStep')?.name;
  }
}

/** Why `applyOnce` refuses `value`, and what to pass instead. */
function notAnEffect(value: unknown): string {
  if (typeof value === 'function') {
    const named = value.name ? ` '${value.name}'` : '';
    return `applyOnce: got the function${named}, not an effect; wrap it: .applyOnce(effect('a-stable-name', fn)) (the name keys its state)`;
  }
  const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object not made by effect()' : typeof value;
  return `applyOnce: effect must be made with effect(name, apply), got ${got}`;
}

function checkLimit(step: string, limit: RateLimit): RateLimit {
  const operator = `agentStep '${step}'`;
  requireKnownOptions(operator, limit, ['calls', 'tokens', 'windowMs', 'expectedTokens'], 'limit.');
  if (limit?.calls === undefined && limit?.tokens === undefined) {
    throw new TopologyError(operator, `${operator}: limit needs calls, tokens or both per windowMs, e.g. { calls: 60, tokens: 90_000, windowMs: 60_000 }`);
  }
  return {
    ...(limit.calls !== undefined ? { calls: requireInteger(operator, 'limit.calls', limit.calls, 1) } : {}),
    ...(limit.tokens !== undefined ? { tokens: requireInteger(operator, 'limit.tokens', limit.tokens, 1) } : {}),
    windowMs: requireInteger(operator, 'limit.windowMs', limit.windowMs, 1),
    ...(limit.expectedTokens !== undefined ? { expectedTokens: requireInteger(operator, 'limit.expectedTokens', limit.expectedTokens, 1) } : {}),
  };
}

/**
 * Starts a topology at `topic`.
 *
 * @example
 * const topology = stream<Dispute>('disputes', { value: json<Dispute>() })
 *   .keyedSerial({ maxInFlight: 3 })
 *   .agentStep('decide', decide, { schema: Decision })
 *   .park({ attempts: 3, retryDelayMs: 1_000 })
 *   .applyOnce(effects)
 *   .to('dispute-decisions')
 *   .build();
 */
export function stream<T>(topic: string, options: StreamOptions<T> = {}): StreamBuilder<T, NoDecisions> {
  requireName('stream', 'topic', topic);
  requireKnownOptions(`stream '${topic}'`, options, ['value', 'deadLetterTopic', 'effectId']);
  const deadLetterTopic = requireName('stream', 'deadLetterTopic', options.deadLetterTopic ?? `${topic}.dlq`);
  if (options.effectId !== undefined) requireFunction('stream', 'effectId', options.effectId);
  const source: SourceNode = {
    kind: 'source',
    name: `${topic}-source`,
    topic,
    value: (options.value ?? json<T>()) as Serde<unknown>,
    deadLetterTopic,
    ...(options.effectId ? { effectId: options.effectId as SourceNode['effectId'] & object } : {}),
  };
  return new StreamBuilder<T>(source, []);
}
