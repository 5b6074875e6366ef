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

/**
 * Resolves after `delayMs` on `clock`; with a `signal`, rejects with its reason as soon as it is
 * aborted (and at once if it already is), and the timer is cancelled.
 */
export function sleep(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      timer.cancel();
      reject(signal!.reason);
    };
    const timer = clock.setTimer(delayMs, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Settles as `work` does, or rejects with the signal's reason as soon as it is aborted; a result
 * that comes after the abort is dropped (and a late rejection is not left unhandled).
 */
export function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) reject(signal.reason);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(signal.aborted ? signal.reason : error);
      },
    );
  });
}
