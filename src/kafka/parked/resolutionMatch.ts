import type { ParkedEvent, ParkedKeyState } from '../../engine/parkedKeys.js';
import type { ResolutionTarget } from './resolutionRecords.js';

/** What the owner of a partition knows of one key now: its parked state and head event, if parked. */
export interface ParkedKeyNow {
  readonly state: ParkedKeyState | undefined;
  readonly head: ParkedEvent | undefined;
}

/** `apply`: the key is parked at the target; `stale`: it is not, and `reason` says what it is instead. */
export type Match = { readonly kind: 'apply' } | { readonly kind: 'stale'; readonly reason: string };

/**
 * Whether a resolution still applies to its key. It applies only while the key is parked (not
 * being replayed) at the very parking the person looked at: the same head event, parked at the
 * same time. So a resolution applies at most once: once applied, the key replays, then is released
 * or parked again at a later time.
 */
export function matchResolution(target: ResolutionTarget, now: ParkedKeyNow): Match {
  const what = `key '${target.lane}' of ${target.topic}/${target.partition}`;
  const { state, head } = now;
  if (!state) return { kind: 'stale', reason: `${what} is not parked (released, or never parked here)` };
  if (state.status !== 'parked') return { kind: 'stale', reason: `${what} is already being replayed after an earlier resolution` };
  if (!head) return { kind: 'stale', reason: `${what} has no head event in the store` };
  if (head.event.effectId !== target.effectId) {
    return { kind: 'stale', reason: `${what} is parked at event ${head.event.effectId} now, not at ${target.effectId}: look again (orderly parked show)` };
  }
  if (state.parkedAtMs !== target.parkedAtMs) {
    return {
      kind: 'stale',
      reason: `${what} was parked again at ${new Date(state.parkedAtMs).toISOString()} (this resolution was for its parking at ${new Date(target.parkedAtMs).toISOString()}): look again`,
    };
  }
  return { kind: 'apply' };
}
