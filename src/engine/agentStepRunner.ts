import type { StandardSchemaV1 } from '@standard-schema/spec';
import { isRateLimited } from '../graph/rateLimited.js';
import type { AgentStepNode, DecideContext, ParkNode } from '../graph/nodes.js';
import { abortable, sleep } from '../ports/clock.js';
import { stateKeys } from '../state/stateKeys.js';
import { timedCall, type TimedCall } from './callTimeout.js';
import type { EngineContext } from './engineContext.js';
import type { Admission } from './rateGate.js';
import { messageOf, metaOf, type EngineEvent } from './events.js';
import { Outcome, type ModelCallResult } from './outcomes.js';

/** One failed attempt, as it is stored and parked. */
export interface AttemptError {
  readonly attempt: number;
  readonly atMs: number;
  readonly error: string;
}

/** Attempts of one event so far, kept in the store so that a crash does not reset them. */
export interface AttemptsRecord {
  readonly count: number;
  readonly errors: readonly AttemptError[];
}

const NO_ATTEMPTS: AttemptsRecord = { count: 0, errors: [] };
const NO_ERRORS: readonly string[] = [];
/** `reportTokens` of a step without a token limit: nothing paces by tokens. */
const ignoreTokens = (): void => undefined;

export type StepResult =
  /** `attemptsStored`: an earlier attempt failed, so its record is in the store, to delete with the decision. */
  | { readonly ok: true; readonly decision: unknown; readonly attemptsStored: boolean }
  | { readonly ok: false; readonly attempts: AttemptsRecord };

/**
 * Asks the agent step for a valid decision: through the rate gate, retrying failed attempts after
 * the park's delay, never counting a 429 as an attempt. It only ever returns a decision or the
 * failed attempts: committing, skipping, applying and parking are the engine's.
 *
 * A first attempt through an open gate to a decide that answers at once (a rule, a cache, a
 * stand-in) returns its result without a promise; anything else continues asynchronously.
 */
export function runAgentStep(
  ctx: EngineContext,
  step: AgentStepNode,
  park: ParkNode,
  event: EngineEvent,
  value: unknown,
  signal: AbortSignal,
): StepResult | Promise<StepResult> {
  const attempts = ctx.attempts.attemptsOf<AttemptsRecord>(step.name, event, event.offset) ?? NO_ATTEMPTS;
  if (attempts.count >= park.attempts) return { ok: false, attempts };
  if (signal.aborted) throw signal.reason;
  const admission = ctx.gate!.tryAdmit();
  if (!admission) return attemptsFrom(ctx, step, park, event, value, signal, attempts);
  const first = callOnce(ctx, step, event, value, attempts.count + 1, attempts.errors, admission, signal);
  if (!isThenable(first) && first.kind === 'decided') return { ok: true, decision: first.decision, attemptsStored: attempts.count > 0 };
  return attemptsFrom(ctx, step, park, event, value, signal, attempts, first);
}

/** The attempts from `attempts` on, `first` being the outcome of one already called. */
async function attemptsFrom(
  ctx: EngineContext,
  step: AgentStepNode,
  park: ParkNode,
  event: EngineEvent,
  value: unknown,
  signal: AbortSignal,
  attempts: AttemptsRecord,
  first?: CallOutcome | Promise<CallOutcome>,
): Promise<StepResult> {
  let refused = false;
  let called = first;
  while (attempts.count < park.attempts) {
    const attempt = attempts.count + 1;
    let outcome: CallOutcome;
    if (called !== undefined) {
      outcome = await called;
      called = undefined;
    } else {
      if (signal.aborted) throw signal.reason;
      const gate = ctx.gate!;
      const admission = gate.tryAdmit() ?? (await gate.admit({ front: refused, signal }));
      outcome = await callOnce(ctx, step, event, value, attempt, attempts.errors, admission, signal);
    }
    refused = outcome.kind === 'refused';
    if (outcome.kind === 'decided') return { ok: true, decision: outcome.decision, attemptsStored: attempts.count > 0 };
    if (outcome.kind === 'refused') continue;
    attempts = { count: attempt, errors: [...attempts.errors, { attempt, atMs: ctx.clock.now(), error: outcome.error }] };
    if (attempts.count >= park.attempts) break;
    await ctx.writer.write([{ type: 'put', key: attemptsKeyOf(step, event), value: attempts }]);
    ctx.report(Outcome.RETRY, event, { attempt, error: outcome.error });
    await sleep(ctx.clock, retryDelayMs(ctx, park), signal);
  }
  return { ok: false, attempts };
}

/** The store key of an event's attempts at a step, to delete once it is decided or parked. */
export function attemptsKeyOf(step: AgentStepNode, event: { topic: string; partition: number; offset: number }): string {
  return stateKeys.attempts(step.name, event, event.offset);
}

type CallOutcome = { kind: 'decided'; decision: unknown } | { kind: 'refused' } | { kind: 'failed'; error: string };

function callOnce(
  ctx: EngineContext,
  step: AgentStepNode,
  event: EngineEvent,
  value: unknown,
  attempt: number,
  previous: readonly AttemptError[],
  admission: Admission,
  signal: AbortSignal,
): CallOutcome | Promise<CallOutcome> {
  const atMs = ctx.clock.now();
  ctx.metrics.modelCall();
  ctx.observer.modelCall?.({ step: step.name, effectId: event.effectId, atMs, attempt });
  const timed = timedCall(ctx.clock, signal, step.timeoutMs, `agentStep '${step.name}'`);
  const call: Call = { ctx, step, event, attempt, admission, signal, timed, startedAtMs: atMs };
  let answer: unknown;
  try {
    const decideCtx: DecideContext = {
      key: event.key,
      effectId: event.effectId,
      attempt,
      record: metaOf(event),
      previousErrors: previous.length === 0 ? NO_ERRORS : previous.map((e) => e.error),
      clock: ctx.clock,
      signal: timed.signal,
      status: ctx.jobs.publisher(step, event, attempt, timed.signal),
      reportTokens: ignoreTokens,
    };
    // Under a token limit the call first waits for room in the token budget.
    answer = ctx.tokens ? ctx.tokens.call(step.decide, value, decideCtx) : step.decide(value, decideCtx);
  } catch (error) {
    timed.end();
    return callFailed(call, error);
  }
  // Answered at once (a rule, a cache): no promise to wait for, and the timeout's timer (if any) ends now.
  if (!isThenable(answer)) {
    timed.end();
    ctx.gate!.answered(admission);
    if (signal.aborted) {
      callEnded(call, 'aborted');
      throw signal.reason;
    }
    callEnded(call, 'answered');
    return validateDecision(step, answer);
  }
  return answerOf(call, answer);
}

/** One call of decide, as its answer is waited for and judged. */
interface Call {
  readonly ctx: EngineContext;
  readonly step: AgentStepNode;
  readonly event: EngineEvent;
  readonly attempt: number;
  readonly admission: Admission;
  /** The engine's signal: aborted when it gives the event up. */
  readonly signal: AbortSignal;
  /** The call's own signal and timeout. */
  readonly timed: TimedCall;
  /** Clock port time the call started. */
  readonly startedAtMs: number;
}

/** Tells the observer how a call ended and how long it took. */
function callEnded({ ctx, step, event, startedAtMs }: Call, result: ModelCallResult): void {
  if (!ctx.observer.modelCallEnded) return;
  const atMs = ctx.clock.now();
  ctx.observer.modelCallEnded({ step: step.name, effectId: event.effectId, atMs, durationMs: atMs - startedAtMs, result });
}

/**
 * Waits for a decide's promised answer; the call ends at the abort (the engine's, or its timeout)
 * even if decide ignores the signal, and its late answer is dropped.
 */
async function answerOf(call: Call, answer: PromiseLike<unknown>): Promise<CallOutcome> {
  let raw: unknown;
  try {
    raw = await abortable(Promise.resolve(answer), call.timed.signal);
  } catch (error) {
    return callFailed(call, error);
  } finally {
    call.timed.end();
  }
  call.ctx.gate!.answered(call.admission);
  callEnded(call, 'answered');
  return validateDecision(call.step, raw);
}

/** A decide that threw, rejected or timed out: given up, refused (a 429: no attempt counted) or failed. */
function callFailed(call: Call, error: unknown): CallOutcome {
  const { ctx, step, event, attempt, admission, signal, timed } = call;
  if (isRateLimited(error) && !signal.aborted) {
    callEnded(call, 'rate_limited');
    ctx.gate!.rateLimited(error.retryAfterMs, admission);
    ctx.report(Outcome.RATE_LIMITED, event, { attempt });
    return { kind: 'refused' };
  }
  ctx.gate!.answered(admission);
  // Given up, not failed: no attempt is counted, the event stays unfinished.
  if (signal.aborted) {
    callEnded(call, 'aborted');
    throw signal.reason;
  }
  callEnded(call, 'failed');
  // Past its timeout: a failed attempt, whatever the call does later.
  if (timed.timedOut()) return { kind: 'failed', error: messageOf(timed.signal.reason) };
  return { kind: 'failed', error: `agentStep '${step.name}' threw: ${messageOf(error)}` };
}

type Validated = CallOutcome & { kind: 'decided' | 'failed' };

/** Validates a decision against the step's schema; a decision given by a person goes through it too. A schema that validates synchronously gives its verdict without a promise. */
export function validateDecision(step: AgentStepNode, raw: unknown): Validated | Promise<Validated> {
  if (!step.schema) return { kind: 'decided', decision: raw };
  let result: StandardSchemaV1.Result<unknown> | Promise<StandardSchemaV1.Result<unknown>>;
  try {
    result = step.schema['~standard'].validate(raw);
  } catch (error) {
    return schemaThrew(step, error);
  }
  if (isThenable(result)) return result.then((settled) => verdict(step, settled), (error: unknown) => schemaThrew(step, error));
  return verdict(step, result);
}

function verdict(step: AgentStepNode, result: StandardSchemaV1.Result<unknown>): Validated {
  if (!result.issues) return { kind: 'decided', decision: result.value };
  const issues = result.issues.map((i) => `${pathOf(i)}${i.message}`).join('; ');
  return { kind: 'failed', error: `agentStep '${step.name}': decision failed its schema: ${issues}` };
}

function schemaThrew(step: AgentStepNode, error: unknown): Validated {
  return { kind: 'failed', error: `agentStep '${step.name}': its schema threw: ${messageOf(error)}` };
}

function pathOf(issue: StandardSchemaV1.Issue): string {
  if (!issue.path?.length) return '';
  return `${issue.path.map((p) => String(typeof p === 'object' ? p.key : p)).join('.')}: `;
}

/** The park's retry delay with its jitter, from the seeded random. */
export function retryDelayMs(ctx: EngineContext, park: ParkNode): number {
  return park.retryDelayMs * (1 + park.retryJitter * (2 * ctx.random.next() - 1));
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}
