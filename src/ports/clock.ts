/** A timer that can be cancelled before it fires. */
export interface Timer {
  cancel(): void;
}

/**
 * The Clock port. The engine reads time and sets timers only through it, so the test driver can
 * run the engine on virtual time.
 */
export interface Clock {
  /** Milliseconds since the epoch (or since the virtual clock's start). */
  now(): number;
  /**
   * Calls `callback` once `delayMs` have passed. A `background` timer does not keep a virtual
   * clock's run alive by itself (like Node's `unref`).
   */
  setTimer(delayMs: number, callback: () => void, options?: { background?: boolean }): Timer;
}

/** Resolves after `delayMs` on `clock`. */
export function sleep(clock: Clock, delayMs: number): Promise<void> {
  return new Promise((resolve) => {
    clock.setTimer(delayMs, resolve);
  });
}
