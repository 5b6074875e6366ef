import { setMaxListeners } from 'node:events';
import type { Clock, Timer } from '../ports/clock.js';

/**
 * A fallback's circuit: `closed` (the agent step decides), `open` (the fallback decides, no call
 * is made), `half-open` (one call probes the step; the fallback decides the rest).
 */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** What a new event may do at the step: call it, call it as the half-open circuit's probe, or go to the fallback. */
export type CircuitPermit = 'call' | 'probe' | 'fallback';

/**
 * What an event whose attempts ran out while the circuit was closed turned out to be: `poison`
 * (the step answers other calls: it parks) or `outage` (the circuit opened: the fallback decides).
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
  private timer: Timer | undefined;
  private period = listenedPeriod();
  /** Aborted when a call answers and so ends the current run of failures: the events that {@link judge} waits for learn they are poison. */
  private failingRun = listenedPeriod();
  private probing = false;
  /** Events at the step: from their permit to call to their end there (a decision, a park, the handler). */
  private atStep = 0;

  constructor(
    private readonly clock: Clock,
    private readonly step: string,
    private readonly afterMs: number,
    private readonly halfOpenAfterMs: number,
    private readonly changed: (state: CircuitState, atMs: number) => void,
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

  /** A call of the step ended: answered (`ok`), or failed (threw, timed out) or refused (a 429). */
  saw(ok: boolean): void {
    if (this.current === 'half-open') {
      if (!this.probing) return;
      this.probing = false;
      if (ok) this.close();
      else this.open();
      return;
    }
    if (this.current !== 'closed') return;
    if (ok) {
      if (this.failingSinceMs === undefined) return;
      this.failingSinceMs = undefined;
      this.cancelTimer();
      this.failingRun.abort();
      this.failingRun = listenedPeriod();
      return;
    }
    if (this.failingSinceMs !== undefined) return;
    this.failingSinceMs = this.clock.now();
    this.timer = this.clock.setTimer(this.afterMs, () => this.open());
  }

  /** An event comes to the step with a permit to call (`call` or `probe`); {@link left} when it is done there. */
  entered(): void {
    this.atStep += 1;
  }

  /** The event that {@link entered} is done at the step. */
  left(): void {
    this.atStep -= 1;
  }

  /**
   * Whether {@link judge} would wait: the circuit is closed, the step has answered no call since
   * its current run of failures began, and another event is at the step, whose calls will tell.
   */
  get undecided(): boolean {
    return this.current === 'closed' && this.failingSinceMs !== undefined && this.atStep > 1;
  }

  /**
   * An event came with its attempts spent before a restart, their last one failed, which this
   * engine has not seen: with other events at the step it counts as a failed call (their calls
   * tell an outage from poison); alone it is judged poison, and opens no circuit by itself.
   */
  spent(): void {
    if (this.atStep > 1) this.saw(false);
  }

  /**
   * Tells poison from an outage for an event whose attempts ran out while the circuit was closed.
   * While the step has answered no call since its current run of failures began and other events
   * are at the step ({@link undecided}), it cannot tell yet: it waits until the circuit opens
   * (`outage`) or a call answers (`poison`), or rejects with `signal`'s reason when the event is
   * given up. So how `afterMs` compares with the park's `attempts × retryDelayMs` does not decide
   * whether a step failing many events' calls parks them. An event alone at the step is poison:
   * nothing else would tell, and its wait would hold its partition's later events for `afterMs`.
   */
  judge(signal: AbortSignal): Exhausted | Promise<Exhausted> {
    if (this.current !== 'closed') return 'outage';
    if (!this.undecided) return 'poison';
    const opened = this.period.signal;
    const answered = this.failingRun.signal;
    return new Promise((resolve, reject) => {
      const end = () => {
        opened.removeEventListener('abort', onOpened);
        answered.removeEventListener('abort', onAnswered);
        signal.removeEventListener('abort', onGivenUp);
      };
      const onOpened = () => (end(), resolve('outage'));
      const onAnswered = () => (end(), resolve('poison'));
      const onGivenUp = () => (end(), reject(signal.reason));
      if (signal.aborted) return onGivenUp();
      opened.addEventListener('abort', onOpened, { once: true });
      answered.addEventListener('abort', onAnswered, { once: true });
      signal.addEventListener('abort', onGivenUp, { once: true });
    });
  }

  /** The event that had `permit` is done with the step: a probe that gave no verdict leaves the probe to the next event. */
  released(permit: CircuitPermit): void {
    if (permit === 'probe' && this.current === 'half-open') this.probing = false;
  }

  private open(): void {
    this.cancelTimer();
    this.current = 'open';
    this.failingSinceMs = undefined;
    this.probing = false;
    this.period.abort(new CircuitOpenError(this.step));
    this.changed('open', this.clock.now());
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
