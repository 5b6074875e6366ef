import type { Clock, Timer } from '../ports/clock.js';

/**
 * The Clock port on the machine's clock: `Date.now()` and `setTimeout`. A `background` timer is
 * unref'd, so it never keeps the process alive by itself.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(delayMs: number, callback: () => void, options?: { background?: boolean }): Timer {
    const handle = setTimeout(callback, Math.max(0, delayMs));
    if (options?.background) handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
};
