import type { RecordMeta } from '../graph/nodes.js';
import { requireFunction, requireInteger, requireName } from './options.js';

/**
 * Marks what {@link effect} made: `applyOnce` takes nothing else (every function has an `apply`).
 * @internal
 */
export const madeByEffect: unique symbol = Symbol.for('orderly.effect');

/**
 * Rows of an effect's own state table. Writes are staged and recorded in the same atomic batch as
 * the effect id, so they happen once or not at all.
 */
export interface StateTable {
  get<V>(row: string): V | undefined;
  put(row: string, value: unknown): void;
  del(row: string): void;
}

/** What an effect is told about the event it applies. */
export interface EffectContext {
  readonly key: string | null;
  /** Stable across redeliveries and replays: pass it as the idempotency key to any outside system. */
  readonly effectId: string;
  readonly record: RecordMeta;
  readonly state: StateTable;
  /** The decisions of the topology's agent steps, by step name (`ctx.decisions.decide`). */
  readonly decisions: Readonly<Record<string, unknown>>;
  /**
   * Aborted when the engine gives the event up (revoked, lost, stopping) or the call passes the
   * effect's `timeoutMs`. Pass it to outside calls; a result that comes after it is dropped.
   */
  readonly signal: AbortSignal;
}

/** Options of {@link effect}. */
export interface EffectOptions {
  /**
   * A call still unsettled after this long is aborted through `ctx.signal` and counts as a failed
   * attempt (retried, then parked, like a throw). @defaultValue no timeout
   */
  timeoutMs?: number;
}

/**
 * An effect applied once per event by `applyOnce`. It may write its state table and call outside
 * systems (with `ctx.effectId` as their idempotency key); what it returns flows downstream.
 */
export interface Effect<T, R = T> {
  /** Names the effect's store: keep it stable, it keys the state across versions. */
  readonly name: string;
  apply(value: T, ctx: EffectContext): R | Promise<R>;
  /** See {@link EffectOptions.timeoutMs}. */
  readonly timeoutMs?: number;
  /** Set by {@link effect} only. */
  readonly [madeByEffect]: true;
}

/**
 * Declares an effect.
 *
 * @example
 * const effects = effect('dispute-effects', ({ event, decision }, { state }) => {
 *   state.put(event.disputeId, decision);
 *   return { disputeId: event.disputeId, ...decision };
 * });
 */
export function effect<T, R = T>(name: string, apply: (value: T, ctx: EffectContext) => R | Promise<R>, options: EffectOptions = {}): Effect<T, R> {
  requireName('effect', 'its name', name);
  requireFunction(`effect '${name}'`, 'apply', apply);
  if (options.timeoutMs === undefined) return Object.freeze({ name, apply, [madeByEffect]: true as const });
  const timeoutMs = requireInteger(`effect '${name}'`, 'timeoutMs', options.timeoutMs, 1);
  return Object.freeze({ name, apply, timeoutMs, [madeByEffect]: true as const });
}

/** True for what {@link effect} made, and for nothing else. */
export function isEffect(value: unknown): value is Effect<unknown, unknown> {
  return typeof value === 'object' && value !== null && (value as Partial<Effect<unknown>>)[madeByEffect] === true;
}
