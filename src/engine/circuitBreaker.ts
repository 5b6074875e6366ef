import { setMaxListeners } from 'node:events';
import type { Clock, Timer } from '../ports/clock.js';
import type { Try } from './tries.js';

/**
 * A fallback's circuit: `closed` (the agent step decides), `open` (the fallback decides, no call
 * is made), `half-open` (one call probes the step; the fallback decides the rest).
 */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** What a new event may do at the step: call it, call it as the half-open circuit's probe, or go to the fallback. */
export type CircuitPermit = 'call' | 'probe' | 'fallback';

/**
 * What an event whose attempts ran out while the circuit was closed is taken for: `poison` (it
 * parks) or `outage` (the fallback decides it).
 */
export type Exhausted = 'poison' | 'outage';

/** The reason the step's calls and waits are aborted with when the circuit opens. */
export class CircuitOpenError extends Error {
  constructor(readonly step: string) {
    super(`agentStep '${step}': its fallback's circuit opened; the fallback decides`);
    this.name = 'CircuitOpenError';
  }
}

/**
 * The circuit of one agent step in one engine, shared by its partitions. It opens when the step's
 * attempts have failed or been refused, none answered, for `afterMs`; it half-opens
 * `halfOpenAfterMs` later, when one call probes the step: an answer closes it, a failure or a 429
 * opens it again. Both moves run on timers of the clock port, so the driver runs them on virtual
 * time, each at its moment (a virtual run goes on until the circuit is half-open). `opened` is aborted when the circuit opens: the
 * calls and waits of the events at the step end then, and the fallback decides them.
 */
export class CircuitBreaker {
  private current: CircuitState = 'closed';
  /** When the current run of failures and refusals began; undefined while the step answers. */
  private failingSinceMs: number | undefined;
  /** How the step's last call that did not answer ended: its error, or a refusal (reported with an opening). */
  private lastFailure: string | undefined;
  /** The events whose calls failed (not refused: a 429 says nothing of poison) in the current run (see {@link judge}). */
  private readonly failing = new Set<object>();
  private timer: Timer | undefined;
  private period = listenedPeriod();
  private probing = false;

  constructor(
    private readonly clock: Clock,
    private readonly step: string,
    private readonly afterMs: number,
    private readonly halfOpenAfterMs: number,
    private readonly changed: (state: CircuitState, atMs: number, cause?: string) => void,
  ) {
    changed('closed', clock.now());
  }

  get state(): CircuitState {
    return this.current;
  }

  /** Aborted (with a {@link CircuitOpenError}) when the circuit opens. */
  get opened(): AbortSignal {
    return this.period.signal;
  }

  /** What the next event at the step may do; a `probe` must end with {@link saw} or {@link released}. */
  permit(): CircuitPermit {
    if (this.current === 'closed') return 'call';
    if (this.current === 'open' || this.probing) return 'fallback';
    this.probing = true;
    return 'probe';
  }

  /**
   * A call of the step for `event` ended: answered (`done`, or `failed` with an answer its schema
   * refused: the step is up, that event is poison), or failed (threw, timed out) or refused (a 429).
   */
  saw(attempt: Try<unknown>, event: object): void {
    const ok = attempt.kind === 'done' || (attempt.kind === 'failed' && attempt.answered === true);
    if (!ok) this.lastFailure = attempt.kind === 'failed' ? attempt.error : 'refused (a 429)';
    if (this.current === 'half-open') {
      if (!this.probing) return;
      this.probing = false;
      if (ok) this.close();
      else this.open();
      return;
    }
    if (this.current !== 'closed') return;
    if (ok) {
      this.failingSinceMs = undefined;
      this.failing.clear();
      this.cancelTimer();
      return;
    }
    if (attempt.kind === 'failed') this.failing.add(event);
    if (this.failingSinceMs !== undefined) return;
    this.failingSinceMs = this.clock.now();
    this.timer = this.clock.setTimer(this.afterMs, () => this.open());
  }

  /**
   * Tells poison from an outage for `event`, whose attempts ran out while the circuit was closed:
   * an outage when the calls of another event failed too since the step last answered, so that it
   * is not this event alone; poison otherwise (the step answers others, refuses them with 429s,
   * or nothing else has called it). So a step failing many events' calls sends them to the fallback
   * however `afterMs` compares with the park's `attempts × retryDelayMs`, without holding any of
   * them until the circuit opens.
   */
  judge(event: object): Exhausted {
    if (this.current !== 'closed') return 'outage';
    return this.failing.size > (this.failing.has(event) ? 1 : 0) ? 'outage' : 'poison';
  }

  /** The event that had `permit` is done with the step: a probe that gave no verdict leaves the probe to the next event. */
  released(permit: CircuitPermit): void {
    if (permit === 'probe' && this.current === 'half-open') this.probing = false;
  }

  private open(): void {
    this.cancelTimer();
    this.current = 'open';
    this.failingSinceMs = undefined;
    this.failing.clear();
    this.probing = false;
    this.period.abort(new CircuitOpenError(this.step));
    this.changed('open', this.clock.now(), this.lastFailure);
    this.timer = this.clock.setTimer(this.halfOpenAfterMs, () => this.halfOpen());
  }

  private halfOpen(): void {
    this.timer = undefined;
    this.current = 'half-open';
    this.period = listenedPeriod();
    this.changed('half-open', this.clock.now());
  }

  private close(): void {
    this.current = 'closed';
    this.changed('closed', this.clock.now());
  }

  /**
   * The engine stops: the timer that would open or half-open the circuit is cancelled. Left
   * running, a real clock's timer would keep a stopped worker's process alive until it fired.
   */
  dispose(): void {
    this.cancelTimer();
  }

  private cancelTimer(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }
}

/**
 * The controller of one closed period: every event waiting at the step, on every partition,
 * listens to its signal, so many listeners are the design, not a leak (Node warns past 10).
 */
function listenedPeriod(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}
