import type { Clock } from '../ports/clock.js';

/** The signal one call of a user function gets, and whether its timeout aborted it. */
export interface TimedCall {
  /** Aborted when the engine gives the event up, or when the call passes its timeout. */
  readonly signal: AbortSignal;
  /** True once the timeout (not the engine giving the event up) aborted the call. */
  timedOut(): boolean;
  /** The call settled: cancels its timer and stops listening to the engine's signal. */
  end(): void;
}

const UNTIMED = { timedOut: () => false, end: () => undefined };

/**
 * Gives one call a signal that aborts when `outer` does or after `timeoutMs` on `clock`, so a hung
 * call releases its event's slot and its key. Without a timeout the call gets `outer` itself.
 */
export function timedCall(clock: Clock, outer: AbortSignal, timeoutMs: number | undefined, what: string): TimedCall {
  if (timeoutMs === undefined) return { signal: outer, ...UNTIMED };
  const controller = new AbortController();
  let timedOut = false;
  const onAbort = () => controller.abort(outer.reason);
  const timer = clock.setTimer(timeoutMs, () => {
    timedOut = true;
    outer.removeEventListener('abort', onAbort);
    controller.abort(new CallTimeoutError(`${what} timed out after ${timeoutMs} ms`));
  });
  if (outer.aborted) onAbort();
  else outer.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    end: () => {
      timer.cancel();
      outer.removeEventListener('abort', onAbort);
    },
  };
}

/** The reason of a call aborted by its timeout: a failed attempt, retried or parked like any other. */
export class CallTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CallTimeoutError';
  }
}
