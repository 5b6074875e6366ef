import { madeByEffect, type Effect, type EffectContext } from '../graph/effect.js';
import { requireFunction, requireInteger, requireKnownOptions, requireName } from './options.js';

// The contract lives in graph/ (the engine reads it); re-exported for the DSL's importers.
export { madeByEffect } from '../graph/effect.js';
export type { Effect, EffectContext, StateTable } from '../graph/effect.js';

/** Options of {@link effect}. */
export interface EffectOptions {
  /**
   * A call still unsettled after this long is aborted through `ctx.signal` and counts as a failed
   * attempt (retried, then ended as the park's `onExhausted` says, like a throw). @defaultValue no timeout
   */
  timeoutMs?: number;
}

/**
 * Declares an effect. What `apply` returns is the value passed on (to `.to()` and `.respond()`):
 * `undefined` (or nothing) passes on the value it was given unchanged, `null` a record with a
 * null value (on a compacted topic, a tombstone).
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
  requireKnownOptions(`effect '${name}'`, options, ['timeoutMs']);
  if (options.timeoutMs === undefined) return Object.freeze({ name, apply, [madeByEffect]: true as const });
  const timeoutMs = requireInteger(`effect '${name}'`, 'timeoutMs', options.timeoutMs, 1);
  return Object.freeze({ name, apply, timeoutMs, [madeByEffect]: true as const });
}

/** True for what {@link effect} made, and for nothing else. */
export function isEffect(value: unknown): value is Effect<unknown, unknown> {
  return typeof value === 'object' && value !== null && (value as Partial<Effect<unknown>>)[madeByEffect] === true;
}
