import type { Logger } from 'pino';
import type { ModelCallResult } from '../engine/outcomes.js';

/** When a step that keeps being refused is worth a warning. */
export interface RateLimitWarningOptions {
  /** How long the step must have been refused (429s with no answer between them) before the first warning. @defaultValue 60000 */
  readonly afterMs?: number;
  /** At most one warning per this interval while it lasts. @defaultValue 60000 */
  readonly everyMs?: number;
}

/** What a warning says: which step, since when, how many refusals. */
export interface RateLimitedFor {
  readonly step: string;
  readonly sinceMs: number;
  readonly forMs: number;
  readonly refusals: number;
}

/** How one call of an agent step ended, as the engine's `modelCallEnded` reports it. */
export interface StepCallEnded {
  readonly step: string;
  /** The event's effect id; without it, no request is watched on its own. */
  readonly effectId?: string;
  readonly atMs: number;
  readonly result: ModelCallResult;
}

/** What a warning of one refused request says: which step and event, since when, how many refusals. */
export interface RequestRefused {
  readonly step: string;
  readonly effectId: string;
  readonly sinceMs: number;
  /** Refusals of this event's calls in a row; `whileAnswered` of them came after other calls of the step ended other than refused (answered or failed). */
  readonly refusals: number;
  readonly whileAnswered: number;
}

/** Refusals of one event's calls in a row, after other calls of the step were answered: this many make a warning. */
export const REQUEST_REFUSALS_WARNED = 5;

interface RequestState {
  readonly since: number;
  /** When its last refusal came. */
  lastAt: number;
  refusals: number;
  whileAnswered: number;
  answeredAtLast: number;
  warnedAt?: number;
}

interface Refused {
  since: number;
  refusals: number;
  warnedAt?: number;
}

/**
 * Watches the calls of each agent step for one that stays rate-limited: every call refused (429)
 * for `afterMs` with no answer between. A 429 is backpressure, logged at debug; a step refused for
 * minutes is a quota or a key that is wrong, which someone must see at the default level. It reads
 * how each call ended, not the events' outcomes: an answer (valid or not) or a failed call shows
 * the provider took the call, whatever the event's disposition then did with it; a call given up
 * by a stop or a rebalance says nothing. Tell it every ended call and, on a timer, the time, so a
 * long Retry-After still gets its warning.
 */
export class RateLimitWarnings {
  private readonly refused = new Map<string, Refused>();
  /** Calls of each step that ended other than refused or given up. */
  private readonly answered = new Map<string, number>();
  /** Each event whose calls are refused in a row, by step and effect id. */
  private readonly requests = new Map<string, RequestState>();
  private readonly afterMs: number;
  private readonly everyMs: number;

  constructor(
    private readonly warn: (state: RateLimitedFor) => void,
    options: RateLimitWarningOptions = {},
    /**
     * Hears of an event whose calls the provider refuses in a row while it answers the step's
     * other calls ({@link REQUEST_REFUSALS_WARNED} times, then at most once per `everyMs`): a
     * request it refuses by itself, which waits at the front of the step for ever, since a 429 is
     * not an attempt.
     */
    private readonly warnRequest: (state: RequestRefused) => void = () => undefined,
  ) {
    this.afterMs = options.afterMs ?? 60_000;
    this.everyMs = options.everyMs ?? 60_000;
    for (const [name, value] of [
      ['afterMs', this.afterMs],
      ['everyMs', this.everyMs],
    ] as const) {
      if (!Number.isFinite(value) || value < 0) throw new RangeError(`rateLimitWarnings.${name} must be 0 or more milliseconds, got ${value}`);
    }
  }

  callEnded(call: StepCallEnded): void {
    if (call.result === 'rate_limited') {
      const state = this.refused.get(call.step) ?? { since: call.atMs, refusals: 0 };
      state.refusals += 1;
      this.refused.set(call.step, state);
      this.checkStep(call.step, state, call.atMs);
      this.requestRefused(call);
      return;
    }
    if (call.effectId !== undefined) this.requests.delete(requestKey(call.step, call.effectId));
    if (call.result === 'aborted') return;
    this.refused.delete(call.step);
    this.answered.set(call.step, (this.answered.get(call.step) ?? 0) + 1);
  }

  private requestRefused(call: StepCallEnded): void {
    if (call.effectId === undefined) return;
    const id = requestKey(call.step, call.effectId);
    const answered = this.answered.get(call.step) ?? 0;
    const state = this.requests.get(id) ?? { since: call.atMs, lastAt: call.atMs, refusals: 0, whileAnswered: 0, answeredAtLast: answered };
    state.refusals += 1;
    state.lastAt = call.atMs;
    if (answered > state.answeredAtLast) state.whileAnswered += 1;
    state.answeredAtLast = answered;
    this.requests.set(id, state);
    if (state.whileAnswered < REQUEST_REFUSALS_WARNED) return;
    if (state.warnedAt !== undefined && call.atMs - state.warnedAt < this.everyMs) return;
    state.warnedAt = call.atMs;
    this.warnRequest({ step: call.step, effectId: call.effectId, sinceMs: state.since, refusals: state.refusals, whileAnswered: state.whileAnswered });
  }

  /**
   * Warns for each step refused for `afterMs` and not warned of in the last `everyMs`, and forgets
   * the events not refused for `afterMs` + `everyMs`: given up while they waited (a stop, a
   * rebalance, a shadow's bound), no call of theirs ends to say so.
   */
  check(nowMs: number): void {
    for (const [step, state] of this.refused) this.checkStep(step, state, nowMs);
    for (const [id, state] of this.requests) if (nowMs - state.lastAt > this.afterMs + this.everyMs) this.requests.delete(id);
  }

  /** Events whose calls are being refused in a row, watched for {@link REQUEST_REFUSALS_WARNED}. */
  get watchedRequests(): number {
    return this.requests.size;
  }

  private checkStep(step: string, state: Refused, nowMs: number): void {
    if (nowMs - state.since < this.afterMs) return;
    if (state.warnedAt !== undefined && nowMs - state.warnedAt < this.everyMs) return;
    state.warnedAt = nowMs;
    this.warn({ step, sinceMs: state.since, forMs: nowMs - state.since, refusals: state.refusals });
  }
}

/** One event's calls at one step, as the per-request watch knows them. */
function requestKey(step: string, effectId: string): string {
  return `${step}\u0000${effectId}`;
}

/** A worker's {@link RateLimitWarnings}, looked at on a timer too until `stop`. */
export interface RateLimitWatch {
  readonly warnings: RateLimitWarnings;
  stop(): void;
}

/** Warns at the default level while an agent step of the topology stays refused by its provider. */
export function rateLimitWatch(logger: Logger, options: RateLimitWarningOptions | undefined): RateLimitWatch {
  const warnings = new RateLimitWarnings(
    (state) =>
      logger.warn(
        state,
        `agentStep '${state.step}' has been rate-limited for ${Math.round(state.forMs / 1000)} s: ${state.refusals} calls refused (429) since ${new Date(state.sinceMs).toISOString()}, none answered; ` +
          "its events wait in order. Check the provider's quota and key, or lower the step's limit.calls",
      ),
    options,
    (state) =>
      logger.warn(
        state,
        `agentStep '${state.step}': the call of effect id ${state.effectId} was refused (429) ${state.refusals} times in a row since ${new Date(state.sinceMs).toISOString()}, ` +
          `${state.whileAnswered} of them after other calls of the step were taken (answered or failed): the provider may refuse this request by itself (one over a limit on its own). ` +
          "A 429 is not an attempt, so it never parks, and it waits at the front of the step with every key's calls behind it; have decide throw an ordinary error for such an answer (docs/guarantees.md, Known limits)",
      ),
  );
  // A long Retry-After means no call ends for a while: look at the time on a timer too.
  const timer = setInterval(() => warnings.check(Date.now()), 5_000);
  timer.unref();
  return { warnings, stop: () => clearInterval(timer) };
}
