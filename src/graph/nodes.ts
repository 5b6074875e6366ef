import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { Clock } from '../ports/clock.js';
import type { Effect } from './effect.js';
import type { RecordMeta } from './recordMeta.js';
import type { Serde } from './serde.js';

export type { RecordMeta } from './recordMeta.js';
export type { DecidedBy } from './decidedBy.js';

/**
 * The decisions of agent steps, by step name. In a chain built with the DSL, a step's
 * `ctx.decisions` is typed with the steps before it: `{ classify: Kind }` after
 * `.agentStep('classify', …, { schema: Kind })`.
 */
export type Decisions = Readonly<Record<string, unknown>>;

/** What a decide function is told besides the event; `Ds` types the earlier steps' decisions. */
export interface DecideContext<Ds extends Decisions = Decisions> {
  readonly key: string | null;
  readonly effectId: string;
  /** 1 for the first call of this event at this step; a 429 does not count. */
  readonly attempt: number;
  readonly record: RecordMeta;
  /** Errors of the earlier failed attempts, oldest first. */
  readonly previousErrors: readonly string[];
  /** The decisions of the agent steps before this one, by step name (`ctx.decisions.classify`). */
  readonly decisions: Ds;
  /** The engine's clock: use it for any waiting, so the test driver can run you on virtual time. */
  readonly clock: Clock;
  /**
   * Aborted when the engine gives up this call: its partition was revoked or lost, or the engine
   * stops, or the call passed the step's `timeoutMs` (then it counts as a failed attempt). Pass it to `fetch` and to `sleep(ctx.clock, ms, ctx.signal)`. Whatever the call returns
   * after the abort is dropped: the event is unfinished, so not committed, and the partition's
   * next owner (or this worker, restarted) decides it again.
   */
  readonly signal: AbortSignal;
  /**
   * The engine instance that made the call, when its runner names one (the test driver does:
   * `engine-1`, then one more at each restart), so a test can tell a restarted engine's calls apart.
   */
  readonly instance?: string;
  /**
   * Publishes a progress update of this event's job to the topology's status topic (declared by
   * `.respond()`), keyed like the event, with the job id, this step's name, this call's id and
   * attempt, and a sequence number counted from 1 per call (so per step). `update` must be JSON. Await it: it settles once the
   * log has the record. Throws when the topology declares no `.respond()`.
   */
  readonly status: (update: unknown) => Promise<void>;
  /**
   * Tells the engine the tokens this call used, as the provider reported them (the adapters of
   * orderly/providers do). Under a step's `limit.tokens` the call's tokens are then held at that
   * count instead of the expected one; without one it does nothing.
   */
  readonly reportTokens: (tokens: number) => void;
  /**
   * Runs `fn` as a durable step of this event's run at this agent step, and returns its result.
   * The result is journaled (in the step's `<step>-runs` store) and durable before `ctx.step`
   * returns. When the event is tried again (a failed attempt, a 429, a crash and redelivery, the
   * replay of its resolved parked key), a step found in the journal at its position returns its
   * journaled result without running `fn`: the run resumes at the first step not completed. A
   * finished event runs no step again (it is a DUPLICATE before any step).
   *
   * Steps are matched by position: the nth `ctx.step` of a call is the run's nth. One whose name
   * differs from the journal's at its position (the code changed under a run) throws and fails
   * the attempt, even if decide catches the error. The result must be JSON data (strings, finite
   * numbers, booleans, null, arrays and plain objects of them) or `undefined`; anything else
   * throws at the step. What `ctx.step` returns is the result as JSON reads it back, on the first
   * run as on a resumed one.
   *
   * `fn` is given the event's effect id and the step's name: pass `${effectId}/${step}` to the
   * outside system as its idempotency key, since a crash between the outside call and its
   * journal write runs the step again, once. See docs/durable-steps.md.
   *
   * @example
   * const account = await ctx.step('lookup-account', () => crm.account(refund.accountId));
   * const opened = await ctx.step('open-case', ({ effectId, step }) => cases.open({ idempotencyKey: `${effectId}/${step}` }));
   */
  readonly step: <R>(name: string, fn: (step: DurableStepContext) => R | Promise<R>) => Promise<R>;
}

/** What the function of a durable step is told (see {@link DecideContext.step}). */
export interface DurableStepContext {
  /** The event's effect id: with `step`, the outside call's idempotency key (`${effectId}/${step}`). */
  readonly effectId: string;
  /** The durable step's name, as given to `ctx.step`. */
  readonly step: string;
  /** The call's signal ({@link DecideContext.signal}): pass it to `fetch`. */
  readonly signal: AbortSignal;
}

/** An agent step's decision, joined to the event it decided. */
export interface Decided<T, D> {
  readonly event: T;
  readonly decision: D;
}

export type DecideFn<T, D, Ds extends Decisions = Decisions> = (event: T, ctx: DecideContext<Ds>) => D | Promise<D>;

/**
 * A provider's rate limit, in any `windowMs`: at most `calls` calls, at most `tokens` tokens, or
 * both (at least one of the two).
 */
export interface RateLimit {
  readonly calls?: number;
  readonly tokens?: number;
  readonly windowMs: number;
  /**
   * Tokens a call is held for until it reports what it used (`ctx.reportTokens`). @defaultValue the
   * largest count reported so far, and `tokens / 10` before the first report
   */
  readonly expectedTokens?: number;
}

/** A limit on calls alone, as the rate gate paces them. */
export interface CallLimit {
  readonly calls: number;
  readonly windowMs: number;
}

export interface EffectIdContext<T> {
  readonly key: string | null;
  readonly value: T;
  readonly record: RecordMeta;
}

export interface SourceNode {
  readonly kind: 'source';
  readonly name: string;
  readonly topic: string;
  readonly value: Serde<unknown>;
  readonly deadLetterTopic: string;
  readonly effectId?: (ctx: EffectIdContext<unknown>) => string;
}

export interface FilterNode {
  readonly kind: 'filter';
  readonly name: string;
  readonly predicate: (value: unknown, key: string | null) => boolean;
}

export interface MapValuesNode {
  readonly kind: 'mapValues';
  readonly name: string;
  readonly mapper: (value: unknown, key: string | null) => unknown;
}

export interface KeyedSerialNode {
  readonly kind: 'keyedSerial';
  readonly name: string;
  readonly maxInFlight: number;
}

export interface AgentStepNode {
  readonly kind: 'agentStep';
  readonly name: string;
  readonly decide: DecideFn<unknown, unknown>;
  readonly schema?: StandardSchemaV1;
  readonly limit?: RateLimit;
  /** A call still unsettled after this long is aborted through its signal and counts as a failed attempt. */
  readonly timeoutMs?: number;
}

export interface ParkNode {
  readonly kind: 'park';
  readonly name: string;
  readonly attempts: number;
  readonly retryDelayMs: number;
  /** Spread each retry delay by up to this share of it, drawn from the Random port. */
  readonly retryJitter: number;
  readonly topic: string;
  /** What becomes of an event whose attempts ran out. */
  readonly onExhausted: Disposition;
}

/**
 * What becomes of an event whose attempts ran out: `park` it and hold its key; send it to the
 * `dlq` and let its key go on; `skip` it; or `fail`: stop the worker, committing nothing past it.
 */
export type Disposition = 'park' | 'dlq' | 'skip' | 'fail';

export interface ApplyOnceNode {
  readonly kind: 'applyOnce';
  readonly name: string;
  readonly effect: Effect<unknown, unknown>;
  /** How long a declared effect id's record is kept (see ApplyOnceOptions.idRetentionMs); absent: the default. */
  readonly idRetentionMs?: number;
}

export interface SinkNode {
  readonly kind: 'sink';
  readonly name: string;
  readonly topic: string;
  readonly value: Serde<unknown>;
}

/** Writes each event's final result (its value, or how it was parked or dropped) as a response record; the agent step's status updates go to `statusTopic`. */
export interface RespondNode {
  readonly kind: 'respond';
  readonly name: string;
  readonly topic: string;
  readonly statusTopic: string;
}

/** What a rule or a handler (of a route, a shadow or a fallback) is told besides the event. */
export interface RuleContext<Ds extends Decisions = Decisions> {
  /** The event's key. */
  readonly key: string | null;
  /** The event's effect id, as the effect will get it. */
  readonly effectId: string;
  /** Where the event's record is in the log. */
  readonly record: RecordMeta;
  /** The decisions of the agent steps before this one, by step name. */
  readonly decisions: Ds;
}

/** A route's rule: a decision for a routine event, or `undefined` to leave the event to the agent step. */
export type RuleFn<T, D, Ds extends Decisions = Decisions> = (event: T, ctx: RuleContext<Ds>) => D | undefined | Promise<D | undefined>;

/** A deterministic handler (a shadow's or a fallback's): a decision for every event. */
export type HandlerFn<T, D> = (event: T, ctx: RuleContext) => D | Promise<D>;

/** Decides routine events by a rule before the agent step that follows it. */
export interface RouteNode {
  readonly kind: 'route';
  readonly name: string;
  readonly rule: RuleFn<unknown, unknown>;
}

/** Runs an agent step in shadow: its decisions are recorded, a handler's are applied. */
export interface ShadowNode {
  readonly kind: 'shadow';
  readonly name: string;
  /** The agent step that runs in shadow: the one right before this node's park. */
  readonly step: string;
  readonly handler: HandlerFn<unknown, unknown>;
  /** Whether the agent's decision and the applied one agree. */
  readonly agrees: (agent: unknown, applied: unknown) => boolean;
  /** Where the shadow records go. */
  readonly topic: string;
  /** How long the applied decision may wait for the agent; undefined: no bound. */
  readonly maxWaitMs?: number;
}

/** Decides for an agent step while its circuit is open (its calls failed or were refused for `afterMs`). */
export interface FallbackNode {
  readonly kind: 'fallback';
  readonly name: string;
  /** The agent step it stands in for: the one right before this node's park. */
  readonly step: string;
  readonly handler: HandlerFn<unknown, unknown>;
  /** The step's calls failed or were refused, none answered, for this long: the circuit opens. */
  readonly afterMs: number;
  /** The circuit stays open this long, then lets one call through to probe the step. */
  readonly halfOpenAfterMs: number;
}

export type ProcessorNode =
  FilterNode | MapValuesNode | KeyedSerialNode | RouteNode | AgentStepNode | ParkNode | ShadowNode | FallbackNode | ApplyOnceNode | SinkNode | RespondNode;
export type GraphNode = SourceNode | ProcessorNode;
