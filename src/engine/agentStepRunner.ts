import type { StandardSchemaV1 } from '@standard-schema/spec';
import { isRateLimited } from '../dsl/rateLimited.js';
import type { AgentStepNode, ParkNode } from '../graph/nodes.js';
import { abortable, sleep } from '../ports/clock.js';
import { stateKeys } from '../state/stateKeys.js';
import type { EngineContext } from './engineContext.js';
import type { Admission } from './rateGate.js';
import { messageOf, metaOf, type EngineEvent } from './events.js';
import { Outcome } from './outcomes.js';

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

export type StepResult =
  /** `attemptsStored`: an earlier attempt failed, so its record is in the store, to delete with the decision. */
  | { readonly ok: true; readonly decision: unknown; readonly attemptsStored: boolean }
  | { readonly ok: false; readonly attempts: AttemptsRecord };

/**
 * Asks the agent step for a valid decision: through the rate gate, retrying failed attempts after
 * the park's delay, never counting a 429 as an attempt. It only ever returns a decision or the
 * failed attempts: committing, skipping, applying and parking are the engine's.
 */
export async function runAgentStep(
  ctx: EngineContext,
  step: AgentStepNode,
  park: ParkNode,
  event: EngineEvent,
  value: unknown,
  signal: AbortSignal,
): Promise<StepResult> {
  let attempts = ctx.attempts.attemptsOf<AttemptsRecord>(step.name, event, event.offset) ?? NO_ATTEMPTS;
  let refused = false;
  while (attempts.count < park.attempts) {
    if (signal.aborted) throw signal.reason;
    const gate = ctx.gate!;
    const admission = gate.tryAdmit() ?? (await gate.admit({ front: refused, signal }));
    const attempt = attempts.count + 1;
    const outcome = await callOnce(ctx, step, event, value, attempt, attempts.errors, admission, signal);
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

async function callOnce(
  ctx: EngineContext,
  step: AgentStepNode,
  event: EngineEvent,
  value: unknown,
  attempt: number,
  previous: readonly AttemptError[],
  admission: Admission,
  signal: AbortSignal,
): Promise<CallOutcome> {
  const atMs = ctx.clock.now();
  ctx.metrics.modelCall();
  ctx.observer.modelCall?.({ step: step.name, effectId: event.effectId, atMs, attempt });
  let raw: unknown;
  try {
    const answer = step.decide(value, {
      key: event.key,
      effectId: event.effectId,
      attempt,
      record: metaOf(event),
      previousErrors: previous.map((e) => e.error),
      clock: ctx.clock,
      signal,
    });
    if (isThenable(answer)) {
      // The call ends at the abort even if decide ignores the signal; its late answer is dropped.
      raw = await abortable(Promise.resolve(answer), signal);
    } else {
      // Answered at once (a rule, a cache): no abort listener to add and remove.
      if (signal.aborted) throw signal.reason;
      raw = answer;
    }
  } catch (error) {
    // Given up, not failed: no attempt is counted, the event stays unfinished.
    if (signal.aborted) throw signal.reason;
    if (isRateLimited(error)) {
      ctx.gate!.rateLimited(error.retryAfterMs, admission);
      ctx.report(Outcome.RATE_LIMITED, event, { attempt });
      return { kind: 'refused' };
    }
    return { kind: 'failed', error: `agentStep '${step.name}' threw: ${messageOf(error)}` };
  }
  return validateDecision(step, raw);
}

/** Validates a decision against the step's schema; a decision given by a person goes through it too. */
export async function validateDecision(step: AgentStepNode, raw: unknown): Promise<CallOutcome & { kind: 'decided' | 'failed' }> {
  if (!step.schema) return { kind: 'decided', decision: raw };
  let result: StandardSchemaV1.Result<unknown>;
  try {
    result = await step.schema['~standard'].validate(raw);
  } catch (error) {
    return { kind: 'failed', error: `agentStep '${step.name}': its schema threw: ${messageOf(error)}` };
  }
  if (!result.issues) return { kind: 'decided', decision: result.value };
  const issues = result.issues.map((i) => `${pathOf(i)}${i.message}`).join('; ');
  return { kind: 'failed', error: `agentStep '${step.name}': decision failed its schema: ${issues}` };
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
