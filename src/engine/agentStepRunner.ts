import type { StandardSchemaV1 } from '@standard-schema/spec';
import { isRateLimited } from '../graph/rateLimited.js';
import type { AgentStepNode, DecideContext, ParkNode } from '../graph/nodes.js';
import { abortable } from '../ports/clock.js';
import { isThenable, withAttempts, type Attempter, type Try, type Tried } from './attemptLoop.js';
import type { AttemptError } from './attemptsRecords.js';
import { DurableSteps } from './durableSteps.js';
import { timedCall, type TimedCall } from './callTimeout.js';
import type { EngineContext } from './engineContext.js';
import type { Admission, RateGate } from './rateGate.js';
import type { TokenPacing } from './tokenPacing.js';
import type { EventInFlight } from './processors/processor.js';
import { messageOf, metaOf, type EngineEvent } from './events.js';
import { Outcome, type ModelCallResult } from './outcomes.js';

/**
 * Asks the agent step for a valid decision: through the rate gate, retrying failed attempts after
 * the park's delay (see {@link withAttempts}), never counting a 429 as an attempt. It only ever
 * returns a decision or the failed attempts: committing, skipping, applying and parking are the
 * engine's.
 *
 * A first attempt through an open gate to a decide that answers at once (a rule, a cache, a
 * stand-in) returns its result without a promise; anything else continues asynchronously.
 */
export function runAgentStep(stepper: Stepper, unit: EventInFlight): Tried<unknown> | Promise<Tried<unknown>> {
  return withAttempts(stepper.ctx, stepper, unit);
}

/** One agent step of one engine, with its park, its rate gate and its token pacing: what every call of it shares. */
export class Stepper implements Attempter<unknown> {
  readonly owner: AgentStepNode;
  /** The step's token pacing, when its limit declares tokens; each step has its own. */
  readonly tokens: TokenPacing | undefined;

  constructor(
    readonly ctx: EngineContext,
    readonly step: AgentStepNode,
    readonly park: ParkNode,
    readonly gate: RateGate,
  ) {
    this.owner = step;
    this.tokens = ctx.tokens.get(step.name);
  }

  attempt(unit: EventInFlight, attempt: number, previous: readonly AttemptError[], refused: boolean): CallOutcome | Promise<CallOutcome> {
    const admission = this.gate.tryAdmit();
    if (admission) return callOnce(this, unit, attempt, previous, admission);
    return this.gate.admit({ front: refused, signal: unit.signal }).then((admitted: Admission) => callOnce(this, unit, attempt, previous, admitted));
  }
}

type CallOutcome = Try<unknown>;

const NO_ERRORS: readonly string[] = [];
/** `reportTokens` of a step without a token limit: nothing paces by tokens. */
const ignoreTokens = (): void => undefined;

function callOnce(
  { ctx, step, gate, tokens }: Stepper,
  unit: EventInFlight,
  attempt: number,
  previous: readonly AttemptError[],
  admission: Admission,
): CallOutcome | Promise<CallOutcome> {
  const { event, signal } = unit;
  const atMs = ctx.clock.now();
  ctx.metrics.modelCall();
  ctx.observer.modelCall?.({ step: step.name, effectId: event.effectId, topic: event.topic, partition: event.partition, offset: event.offset, atMs, attempt });
  const timed = timedCall(ctx.clock, signal, step.timeoutMs, `agentStep '${step.name}'`);
  const call: Call = { ctx, step, gate, event, attempt, admission, signal, timed, steps: undefined, startedAtMs: atMs };
  let answer: unknown;
  try {
    const decideCtx: DecideContext = {
      key: event.key,
      effectId: event.effectId,
      attempt,
      record: metaOf(event),
      previousErrors: previous.length === 0 ? NO_ERRORS : previous.map((e) => e.error),
      decisions: unit.decisions,
      clock: ctx.clock,
      signal: timed.signal,
      ...(ctx.instance !== undefined ? { instance: ctx.instance } : {}),
      status: ctx.jobs.publisher(step, event, attempt, timed.signal),
      reportTokens: ignoreTokens,
      step: durableStepOf(call),
    };
    // Called alone, never as the node's method: a method passed unbound then fails at once on its
    // `this`, rather than writing to orderly's node. Under the step's token limit the call first
    // waits for room in its token budget.
    const decide = step.decide;
    answer = tokens ? tokens.call(decide, unit.value, decideCtx) : decide(unit.value, decideCtx);
  } catch (error) {
    timed.end();
    return callFailed(call, error);
  }
  // Answered at once (a rule, a cache): no promise to wait for, and the timeout's timer (if any) ends now.
  if (!isThenable(answer)) {
    timed.end();
    if (signal.aborted) {
      gate.released(admission);
      callEnded(call, 'aborted');
      throw signal.reason;
    }
    gate.answered(admission);
    if (call.steps?.failure !== undefined) return stepsFailed(call, call.steps.failure);
    callEnded(call, 'answered');
    return validateDecision(step, answer);
  }
  return answerOf(call, answer);
}

/** One call of decide, as its answer is waited for and judged. */
interface Call {
  readonly ctx: EngineContext;
  readonly step: AgentStepNode;
  readonly gate: RateGate;
  readonly event: EngineEvent;
  readonly attempt: number;
  readonly admission: Admission;
  /** The engine's signal: aborted when it gives the event up. */
  readonly signal: AbortSignal;
  /** The call's own signal and timeout. */
  readonly timed: TimedCall;
  /** Its durable steps (`ctx.step`), from the first one it takes. */
  steps: DurableSteps | undefined;
  /** Clock port time the call started. */
  readonly startedAtMs: number;
}

/**
 * `DecideContext.step` of a call: its {@link DurableSteps} are made at its first `ctx.step` (most
 * decides take none). A function of its own, so that the closure holds the call alone and
 * `callOnce`'s variables stay off the heap.
 */
function durableStepOf(call: Call): DecideContext['step'] {
  return (name, fn) => (call.steps ??= new DurableSteps(call.ctx, call.step, call.event, call.timed.signal)).step(name, fn);
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
  call.gate.answered(call.admission);
  if (call.steps?.broken !== undefined) return stepsBroken(call);
  if (call.steps?.failure !== undefined) return stepsFailed(call, call.steps.failure);
  callEnded(call, 'answered');
  return validateDecision(call.step, raw);
}

/** A call one of whose journal writes failed: the engine's failure, thrown as its other writes' are (a reset partition, a store that failed). */
function stepsBroken(call: Call): never {
  callEnded(call, 'failed');
  throw call.steps!.broken;
}

/** A call whose durable steps disagreed with the run journal: a failed attempt, whatever decide answered. */
function stepsFailed(call: Call, error: string): CallOutcome {
  callEnded(call, 'failed');
  return { kind: 'failed', error };
}

/** A decide that threw, rejected or timed out: given up, refused (a 429: no attempt counted) or failed. */
function callFailed(call: Call, error: unknown): CallOutcome {
  const { ctx, step, gate, event, attempt, admission, signal, timed } = call;
  if (isRateLimited(error) && !signal.aborted) {
    callEnded(call, 'rate_limited');
    gate.rateLimited(error.retryAfterMs, admission);
    ctx.report(Outcome.RATE_LIMITED, event, { attempt });
    return { kind: 'refused' };
  }
  if (signal.aborted) gate.released(admission);
  else gate.answered(admission);
  if (call.steps?.broken !== undefined && !signal.aborted) return stepsBroken(call);
  // Given up, not failed: no attempt is counted, the event stays unfinished.
  if (signal.aborted) {
    callEnded(call, 'aborted');
    throw signal.reason;
  }
  callEnded(call, 'failed');
  if (call.steps?.failure !== undefined) return { kind: 'failed', error: call.steps.failure };
  // Past its timeout: a failed attempt, whatever the call does later.
  if (timed.timedOut()) return { kind: 'failed', error: messageOf(timed.signal.reason) };
  return { kind: 'failed', error: `agentStep '${step.name}' threw: ${messageOf(error)}` };
}

type Validated = CallOutcome & { kind: 'done' | 'failed' };

/** Validates a decision against the step's schema; a decision given by a person goes through it too. A schema that validates synchronously gives its verdict without a promise. */
export function validateDecision(step: AgentStepNode, raw: unknown): Validated | Promise<Validated> {
  if (!step.schema) return storable(step, raw);
  let result: StandardSchemaV1.Result<unknown> | Promise<StandardSchemaV1.Result<unknown>>;
  try {
    result = step.schema['~standard'].validate(raw);
  } catch (error) {
    return schemaThrew(step, error);
  }
  if (isThenable(result))
    return result.then(
      (settled) => verdict(step, settled),
      (error: unknown) => schemaThrew(step, error),
    );
  return verdict(step, result);
}

function verdict(step: AgentStepNode, result: StandardSchemaV1.Result<unknown>): Validated {
  if (!result.issues) return storable(step, result.value);
  const issues = result.issues.map((i) => `${pathOf(i)}${i.message}`).join('; ');
  return { kind: 'failed', error: `agentStep '${step.name}': decision failed its schema: ${issues}`, answered: true };
}

/**
 * A decision is kept as JSON (with a parked event, a durable run's journal, an effect record), so
 * one JSON cannot hold, or none at all (`undefined`: a decide function that forgot its return),
 * fails the attempt as an answer refused, rather than the batch that would store it.
 */
function storable(step: AgentStepNode, decision: unknown): Validated {
  // Not an answer: a client that read no decision out of its response (`res.choices?.[0]...`) returns nothing, as in an outage.
  if (decision === undefined)
    return {
      kind: 'failed',
      error: `agentStep '${step.name}': its decision is undefined; return the decision (a JSON value), or throw to fail the attempt`,
    };
  let json: string | undefined;
  try {
    json = JSON.stringify(decision) as string | undefined;
  } catch (error) {
    return {
      kind: 'failed',
      error: `agentStep '${step.name}': its decision cannot be stored as JSON: ${messageOf(error)}; return a JSON value`,
      answered: true,
    };
  }
  if (json === undefined)
    return { kind: 'failed', error: `agentStep '${step.name}': its decision (a ${typeof decision}) has no JSON form; return a JSON value`, answered: true };
  // Passed on as its JSON's copy: what runs later (a later step, the effect) cannot change the decision
  // into one the store cannot hold, and it sees what a replay from the store would see.
  return { kind: 'done', value: JSON.parse(json) as unknown };
}

function schemaThrew(step: AgentStepNode, error: unknown): Validated {
  return { kind: 'failed', error: `agentStep '${step.name}': its schema threw: ${messageOf(error)}`, answered: true };
}

function pathOf(issue: StandardSchemaV1.Issue): string {
  if (!issue.path?.length) return '';
  return `${issue.path.map((p) => String(typeof p === 'object' ? p.key : p)).join('.')}: `;
}
