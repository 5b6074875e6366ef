import { setMaxListeners } from 'node:events';
import type { Clock, Timer } from '../ports/clock.js';
import type { AttemptError } from './attemptsRecords.js';
import type { Try } from './tries.js';

/** An event as the circuit tells events apart: by its place in the log, the same on a redelivery or a replay. */
export interface CircuitEvent {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

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
 * attempts have failed or been refused, none answered, for `afterMs`, and an event they failed
 * waits at the step (else at the next failure: see `lapsed`); it half-opens
 * `halfOpenAfterMs` later, when one call probes the step: an answer closes it, a failure or a 429
 * opens it again. Both moves run on timers of the clock port, so the driver runs them on virtual
 * time, each at its moment (a virtual run goes on until the circuit is half-open). `opened` is aborted when the circuit opens: the
 * calls and waits of the events at the step end then, and the fallback decides them.
 */
export class CircuitBreaker {
  private current: CircuitState = 'closed';
  /** When the current run of failures and refusals began (the open timer counts from it); undefined while the step answers. */
  private failingSinceMs: number | undefined;
  /** When the current run's last failure or refusal came. */
  private lastTroubleMs = 0;
  /** When this engine last saw the step answer: failures stored before it are not of the current run. */
  private answeredAtMs = -Infinity;
  /** How the step's last call that did not answer ended: its error, or a refusal (reported with an opening). */
  private lastFailure: string | undefined;
  /** The events whose calls failed (not refused: a 429 says nothing of poison) in the current run, by their place in the log (see {@link judge}). */
  private readonly failing = new Set<string>();
  /** The events whose calls were refused (a 429) in the current run, by their place in the log. */
  private readonly refused = new Set<string>();
  /** The events at the step now (calling it, or waiting to), by their place in the log, with how many of each (a redelivery may overlap its given-up run). */
  private readonly atStep = new Map<string, number>();
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
  saw(attempt: Try<unknown>, event: CircuitEvent): void {
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
      this.answeredAtMs = this.clock.now();
      this.endRun();
      return;
    }
    const now = this.clock.now();
    // A run whose events all ended (no timer, nothing waiting) more than afterMs before this is over:
    // a failure or a 429 long after a lone poison event starts a run of its own.
    if (this.failingSinceMs !== undefined && this.timer === undefined && now - this.lastTroubleMs > this.afterMs) this.clearRun();
    this.lastTroubleMs = now;
    const id = idOf(event);
    if (attempt.kind !== 'failed') this.refused.add(id);
    else this.failing.add(id);
    if (this.failingSinceMs === undefined) {
      this.failingSinceMs = now;
      this.timer = this.clock.setTimer(this.afterMs, () => this.lapsed());
    } else if (this.timer === undefined && now - this.failingSinceMs >= this.afterMs) {
      // The run lasted afterMs while no failing event waited at the step (see lapsed): this failure opens it.
      this.open();
    }
  }

  /** `event` comes to the step (its calls and waits begin); {@link left} when it is done with it. */
  entered(event: CircuitEvent): void {
    const id = idOf(event);
    this.atStep.set(id, (this.atStep.get(id) ?? 0) + 1);
  }

  /** `event` is done with the step (decided, judged, or given up). */
  left(event: CircuitEvent): void {
    const id = idOf(event);
    const count = (this.atStep.get(id) ?? 0) - 1;
    if (count > 0) this.atStep.set(id, count);
    else this.atStep.delete(id);
  }

  /**
   * The run has lasted `afterMs`: the circuit opens if an event whose calls failed or were refused
   * in it still waits at the step (for its retry, a Retry-After, its call). Only then is there an
   * outage to stand in for now: when every such event has ended (parked as poison) and none has
   * called since, the circuit stays closed, and the run's next failure or refusal opens it.
   */
  private lapsed(): void {
    this.timer = undefined;
    for (const id of this.atStep.keys()) if (this.failing.has(id) || this.refused.has(id)) return this.open();
  }

  /**
   * `event` has attempts stored before (by an engine before a restart, or before its partition
   * moved): it comes to the step with them, or it was parked with them. Those that failed
   * without an answer within the last `afterMs`, and after the step last answered here, count in
   * the current run as if this engine had seen them: for {@link judge}, for when the run began (the
   * open timer counts from its first failure) and for its last trouble. So an outage across a
   * restart is not taken for poison.
   */
  failedBefore(event: CircuitEvent, errors: readonly AttemptError[]): void {
    if (this.current !== 'closed') return;
    const now = this.clock.now();
    const since = Math.max(now - this.afterMs, this.answeredAtMs);
    // Stamped by another worker's clock, a failure may lie ahead of this one's: it happened now at the latest.
    const recent = errors.filter((e) => e.answered !== true && e.atMs >= since).map((e) => Math.min(e.atMs, now));
    if (recent.length === 0) return;
    this.failing.add(idOf(event));
    const first = recent[0]!;
    this.lastTroubleMs = Math.max(this.lastTroubleMs, recent[recent.length - 1]!);
    if (this.failingSinceMs !== undefined && this.failingSinceMs <= first) return;
    this.failingSinceMs = first;
    this.cancelTimer();
    this.timer = this.clock.setTimer(first + this.afterMs - now, () => this.lapsed());
  }

  /**
   * Tells poison from an outage for `event`, whose attempts ran out while the circuit was closed:
   * an outage when the calls of another event failed too since the step last answered, so that it
   * is not this event alone; poison otherwise (the step answers others, refuses them with 429s,
   * or nothing else has called it). So a step failing many events' calls sends them to the fallback
   * however `afterMs` compares with the park's `attempts × retryDelayMs`, without holding any of
   * them until the circuit opens. A parked event's failures stay in the run: with no answer
   * since, the next event whose calls all fail is taken for an outage (events that come one at a
   * time in an outage are parked once, not each).
   */
  judge(event: CircuitEvent): Exhausted {
    if (this.current !== 'closed') return 'outage';
    return this.failing.size > (this.failing.has(idOf(event)) ? 1 : 0) ? 'outage' : 'poison';
  }

  /** The event that had `permit` is done with the step: a probe that gave no verdict leaves the probe to the next event. */
  released(permit: CircuitPermit): void {
    if (permit === 'probe' && this.current === 'half-open') this.probing = false;
  }

  private open(): void {
    this.cancelTimer();
    this.current = 'open';
    this.clearRun();
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
    this.answeredAtMs = this.clock.now();
    this.changed('closed', this.clock.now());
  }

  /**
   * The engine stops: the timer that would open or half-open the circuit is cancelled. Left
   * running, a real clock's timer would keep a stopped worker's process alive until it fired.
   */
  dispose(): void {
    this.cancelTimer();
  }

  /** The step answered: the run of failures and refusals ends, and with it the open timer. */
  private endRun(): void {
    this.clearRun();
    this.cancelTimer();
  }

  private clearRun(): void {
    this.failingSinceMs = undefined;
    this.failing.clear();
    this.refused.clear();
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

/** An event's place in the log, as the circuit keys its failures. */
function idOf(event: CircuitEvent): string {
  return `${event.topic}/${event.partition}@${event.offset}`;
}
