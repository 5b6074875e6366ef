import type { Clock, Timer } from '../ports/clock.js';

/**
 * The Clock port on the machine's clock: `Date.now()` and `setTimeout`. A `background` timer is
 * unref'd, so it never keeps the process alive by itself.
 *
 * A timer fires only once `now()` has reached its due time: Node's timers run on a monotonic clock
 * rounded to the millisecond and can fire a millisecond before `Date.now()` says the delay has
 * passed, and a Retry-After wait must never end early (no call before the refusal's delay ran out).
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(delayMs: number, callback: () => void, options?: { background?: boolean }): Timer {
    const dueMs = Date.now() + Math.max(0, delayMs);
    let handle: NodeJS.Timeout;
    const arm = (waitMs: number) => {
      handle = setTimeout(fire, waitMs);
      if (options?.background) handle.unref();
    };
    const fire = () => {
      const leftMs = dueMs - Date.now();
      if (leftMs > 0) arm(leftMs);
      else callback();
    };
    arm(Math.max(0, delayMs));
    return { cancel: () => clearTimeout(handle) };
  },
};
