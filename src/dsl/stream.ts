import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { Decided, DecideFn, Disposition, EffectIdContext, GraphNode, ProcessorNode, RateLimit, SourceNode } from '../graph/nodes.js';
import type { Effect } from '../graph/effect.js';
import { json, type Serde } from '../graph/serde.js';
import { Topology } from '../graph/topology.js';
import { isEffect } from './effect.js';
import { requireFunction, requireInteger, requireName, requireNumber } from './options.js';
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

export interface ParkOptions extends NameOption {
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

type DecisionOf<S, D> = S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : D;

/**
 * An immutable handle on a stream being declared. Every operator checks its arguments, adds one
 * node and returns a new handle; `build()` validates the whole chain and returns a {@link Topology}.
 */
export class StreamBuilder<T> {
  /** @internal */
  constructor(
    private readonly source: SourceNode,
    private readonly nodes: readonly ProcessorNode[],
  ) {}

  /** Keeps the events for which `predicate` holds; the others finish as FILTERED. Stateless. */
  filter(predicate: (value: T, key: string | null) => boolean, options: NameOption = {}): StreamBuilder<T> {
    requireFunction('filter', 'its predicate', predicate);
    const name = options.name ?? `filter-${this.count('filter') + 1}`;
    return this.with({ kind: 'filter', name, predicate: predicate as (v: unknown, k: string | null) => boolean });
  }

  /** Replaces each value by `mapper(value, key)`. Stateless. */
  mapValues<U>(mapper: (value: T, key: string | null) => U, options: NameOption = {}): StreamBuilder<U> {
    requireFunction('mapValues', 'its mapper', mapper);
    const name = options.name ?? `map-values-${this.count('mapValues') + 1}`;
    return this.with({ kind: 'mapValues', name, mapper: mapper as (v: unknown, k: string | null) => unknown });
  }

  /**
   * Runs events of different keys in parallel and events of one key one after another, in log
   * order: per partition at most `maxInFlight` events in flight, never two of one key.
   * Required upstream of {@link StreamBuilder.agentStep}.
   */
  keyedSerial(options: KeyedSerialOptions = {}): StreamBuilder<T> {
    const maxInFlight = requireInteger('keyedSerial', 'maxInFlight', options.maxInFlight ?? 1, 1);
    const name = options.name ?? `${this.source.topic}-keyed-serial`;
    return this.with({ kind: 'keyedSerial', name, maxInFlight });
  }

  /**
   * Asks `decide` (a model call) for a decision on each event. `decide` returns a decision and
   * nothing else: the engine validates it against `schema`, then applies it downstream or, after
   * the attempts of the `park()` that follows, parks the event. Throw {@link RateLimited} for a 429.
   * Stateful: its attempts are kept in the store, under its name.
   *
   * @example
   * stream('disputes').keyedSerial({ maxInFlight: 3 })
   *   .agentStep('decide', decide, { schema: Decision })
   *   .park({ attempts: 3 })
   *   .applyOnce(effects)
   */
  agentStep<D, S extends StandardSchemaV1 | undefined = undefined>(
    name: string,
    decide: DecideFn<T, D>,
    options: AgentStepOptions<S> = {},
  ): StreamBuilder<Decided<T, DecisionOf<S, D>>> {
    requireName('agentStep', 'its name', name);
    requireFunction(`agentStep '${name}'`, 'decide', decide);
    if (options.schema !== undefined && typeof options.schema?.['~standard']?.validate !== 'function') {
      throw new TopologyError(`agentStep '${name}'`, `agentStep '${name}': schema must be a Standard Schema (zod, valibot, arktype, ...)`);
    }
    const limit = options.limit && checkLimit(name, options.limit);
    const timeoutMs = options.timeoutMs === undefined ? undefined : requireInteger(`agentStep '${name}'`, 'timeoutMs', options.timeoutMs, 1);
    return this.with({
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
  park(options: ParkOptions): StreamBuilder<T> {
    const step = this.lastAgentStep();
    const operator = step ? `park after '${step}'` : 'park';
    const attempts = requireInteger(operator, 'attempts', options?.attempts, 1);
    const retryDelayMs = requireNumber(operator, 'retryDelayMs', options.retryDelayMs ?? 1_000, 0);
    const retryJitter = requireNumber(operator, 'retryJitter', options.retryJitter ?? 0, 0, 1);
    const topic = requireName(operator, 'topic', options.topic ?? `${this.source.topic}.parked`);
    const name = options.name ?? `${step ?? this.source.topic}-park`;
    const onExhausted = options.onExhausted ?? 'park';
    if (!dispositions.includes(onExhausted)) {
      throw new TopologyError(
        operator,
        `${operator}: onExhausted must be one of ${dispositions.map((d) => `'${d}'`).join(', ')}, got ${JSON.stringify(onExhausted)}`,
      );
    }
    return this.with({ kind: 'park', name, attempts, retryDelayMs, retryJitter, topic, onExhausted });
  }

  /**
   * Applies `effect` once per event: its effect id is looked up before any model call, and the
   * effect's writes are recorded with the id in one atomic batch. Stateful: its store is named
   * after the effect.
   */
  applyOnce<R>(effect: Effect<T, R>, options: NameOption = {}): StreamBuilder<R> {
    if (!isEffect(effect)) throw new TopologyError('applyOnce', notAnEffect(effect));
    const name = requireName('applyOnce', 'its name', options.name ?? effect.name);
    return this.with({ kind: 'applyOnce', name, effect: effect as Effect<unknown, unknown> });
  }

  /** Writes each value to `topic`, keyed as the input, and passes it on. */
  to(topic: string, options: ToOptions<T> = {}): StreamBuilder<T> {
    requireName('to', 'topic', topic);
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
  respond(topic: string, options: RespondOptions = {}): StreamBuilder<T> {
    requireName('respond', 'topic', topic);
    const statusTopic = requireName('respond', 'statusTopic', options.statusTopic ?? `${this.source.topic}.status`);
    return this.with({ kind: 'respond', name: options.name ?? `${topic}-respond`, topic, statusTopic });
  }

  /** Validates the chain and compiles it. Throws a {@link TopologyError} naming the operator and the fix. */
  build(): Topology {
    const nodes: readonly GraphNode[] = [this.source, ...this.nodes];
    validateTopology(nodes);
    return new Topology(this.source, this.nodes);
  }

  private with<U>(node: ProcessorNode): StreamBuilder<U> {
    return new StreamBuilder<U>(this.source, [...this.nodes, node]);
  }

  private count(kind: ProcessorNode['kind']): number {
    return this.nodes.filter((n) => n.kind === kind).length;
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
export function stream<T>(topic: string, options: StreamOptions<T> = {}): StreamBuilder<T> {
  requireName('stream', 'topic', topic);
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
