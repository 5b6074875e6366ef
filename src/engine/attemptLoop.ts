import type { ParkNode } from '../graph/nodes.js';
import { sleep } from '../ports/clock.js';
import { NO_ATTEMPTS, type AttemptError, type AttemptsOwner, type AttemptsRecord } from './attemptsRecords.js';
import type { EngineContext } from './engineContext.js';
import { Outcome } from './outcomes.js';
import type { EventInFlight } from './processors/processor.js';
import type { Tried, Try } from './tries.js';

export type { Tried, Try } from './tries.js';

/** What is tried, built once per node: by whom (its attempts record), under which park, and how. */
export interface Attempter<T> {
  readonly owner: AttemptsOwner;
  /** How many attempts and how long between them; without a park, one attempt. */
  readonly park: ParkNode | undefined;
  /** One attempt for `unit`; `refused`: the one before was refused (a 429), so it waits at the front. */
  attempt(unit: EventInFlight, attempt: number, previous: readonly AttemptError[], refused: boolean): Try<T> | Promise<Try<T>>;
}

/**
 * The one retry loop of the engine, for agent steps and effects alike: it resumes from the event's
 * stored attempts, writes each failed attempt to the store before it waits the park's delay (so a
 * crash resets no count; exactly-once, none that its transaction committed), and never counts a
 * 429. An event that resumes waits what is left of the delay after its last stored failure. A
 * first attempt that succeeds at once returns without a promise.
 */
export function withAttempts<T>(ctx: EngineContext, tried: Attempter<T>, unit: EventInFlight): Tried<T> | Promise<Tried<T>> {
  const max = tried.park?.attempts ?? 1;
  const attempts = tried.park ? ctx.attempts.of(tried.owner, unit.event) : NO_ATTEMPTS;
  if (attempts.count >= max) return { ok: false, attempts };
  if (unit.signal.aborted) throw unit.signal.reason;
  const waitMs = attempts.count > 0 ? resumedDelayMs(ctx, tried.park!, attempts) : 0;
  if (waitMs > 0) return resumeAfter(ctx, tried, unit, max, attempts, waitMs);
  const first = tried.attempt(unit, attempts.count + 1, attempts.errors, false);
  if (!isThenable(first) && first.kind === 'done') return { ok: true, value: first.value, attemptsStored: attempts.count > 0 };
  return attemptsFrom(ctx, tried, unit, max, attempts, first);
}

/** The attempts from `attempts` on, `first` being one already made. */
async function attemptsFrom<T>(
  ctx: EngineContext,
  tried: Attempter<T>,
  unit: EventInFlight,
  max: number,
  attempts: AttemptsRecord,
  first: Try<T> | Promise<Try<T>>,
): Promise<Tried<T>> {
  const { signal, event } = unit;
  let refused = false;
  let made: Try<T> | Promise<Try<T>> | undefined = first;
  while (attempts.count < max) {
    const attempt = attempts.count + 1;
    let outcome: Try<T>;
    if (made !== undefined) {
      outcome = await made;
      made = undefined;
    } else {
      if (signal.aborted) throw signal.reason;
      outcome = await tried.attempt(unit, attempt, attempts.errors, refused);
    }
    refused = outcome.kind === 'refused';
    if (outcome.kind === 'done') return { ok: true, value: outcome.value, attemptsStored: attempts.count > 0 };
    if (outcome.kind === 'refused') continue;
    const failed: AttemptError = { attempt, atMs: ctx.clock.now(), error: outcome.error, ...(outcome.answered ? { answered: true as const } : {}) };
    attempts = { count: attempt, errors: [...attempts.errors, failed] };
    if (attempts.count >= max) break;
    await ctx.end.atomically(event, () => ctx.writer.write([ctx.attempts.put(tried.owner, event, attempts)]));
    ctx.report(Outcome.RETRY, event, { attempt, error: outcome.error });
    await sleep(ctx.clock, retryDelayMs(ctx, tried.park!), signal);
  }
  return { ok: false, attempts };
}

/**
 * What is left of the retry delay after the last stored failure, for an event that resumes its
 * attempts (its worker restarted, or its partition moved, while it waited): the delay is kept
 * across a crash as the count is. The base delay: the jitter drawn before the crash is not stored.
 */
function resumedDelayMs(ctx: EngineContext, park: ParkNode, attempts: AttemptsRecord): number {
  const last = attempts.errors.at(-1);
  if (last === undefined) return 0;
  return Math.min(park.retryDelayMs, last.atMs + park.retryDelayMs - ctx.clock.now());
}

async function resumeAfter<T>(
  ctx: EngineContext,
  tried: Attempter<T>,
  unit: EventInFlight,
  max: number,
  attempts: AttemptsRecord,
  waitMs: number,
): Promise<Tried<T>> {
  await sleep(ctx.clock, waitMs, unit.signal);
  return attemptsFrom(ctx, tried, unit, max, attempts, tried.attempt(unit, attempts.count + 1, attempts.errors, false));
}

/** The park's retry delay with its jitter, from the seeded random. */
export function retryDelayMs(ctx: EngineContext, park: ParkNode): number {
  return park.retryDelayMs * (1 + park.retryJitter * (2 * ctx.random.next() - 1));
}

export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}
