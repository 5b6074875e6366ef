import { RateLimited } from '../dsl/rateLimited.js';
import type { DecideContext, DecideFn } from '../graph/nodes.js';
import { sleep } from '../ports/clock.js';
import type { HeaderSource } from './headers.js';
import { ProviderOverloaded } from './providerOverloaded.js';
import { rateLimitsOf, type RateLimitHeaders } from './rateLimitHeaders.js';
import { retryDelayOf } from './retryDelay.js';
import { TokenPacer, type TokenLimit } from '../engine/tokenPacer.js';

/** The delay of a 429 whose headers name none. */
export const DEFAULT_RATE_LIMITED_DELAY_MS = 1_000;
/** The delay of an overloaded response (503, 529) whose headers name none. */
export const DEFAULT_OVERLOADED_DELAY_MS = 5_000;

/** HTTP statuses that mean the provider as a whole is overloaded, not that this call is wrong. */
const OVERLOADED_STATUSES: ReadonlySet<number> = new Set([503, 529]);

/** Tokens a call used, as the provider reported them. */
export interface TokenUsage {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly totalTokens?: number;
}

/** One call of a provider, as an adapter reports it to `onCall`. */
export interface ProviderCall {
  readonly provider: string;
  /** The event's effect id, and the engine's attempt number for it. */
  readonly effectId: string;
  readonly attempt: number;
  readonly outcome: 'decided' | 'rateLimited' | 'overloaded' | 'failed';
  /** The HTTP status of a refused or failed call; absent for a decision or a failure without a response. */
  readonly status?: number;
  /** When the call ended, on the engine's clock. */
  readonly atMs: number;
  /** The delay a refusal or an overload asked for, and which header said so. */
  readonly delayMs?: number;
  readonly delayFrom?: string;
  /** The tokens the call used (decisions only). */
  readonly usage?: TokenUsage;
  /** The budgets the response's rate-limit headers reported. */
  readonly limits: RateLimitHeaders;
}

/** Options every adapter takes. */
export interface ProviderOptions {
  /** The delay of a 429 whose headers name none. @defaultValue 1000 */
  readonly rateLimitedDelayMs?: number;
  /** The delay of an overloaded response (503, 529) whose headers name none. @defaultValue 5000 */
  readonly overloadedDelayMs?: number;
  /** Hears every call: its outcome, its token usage and the budgets its headers reported. It must return at once and not throw. */
  readonly onCall?: (call: ProviderCall) => void;
  /** The wall clock that HTTP dates and RFC 3339 reset times are counted from. @defaultValue Date.now */
  readonly now?: () => number;
  /**
   * The provider's token budget: calls start only while the tokens of the window's calls (as
   * reported, or as expected while they run) leave room for one more. Without it, calls are not
   * paced by tokens (a token 429 is handled like any other).
   */
  readonly tokenLimit?: TokenLimit;
}

/** What a provider answered: the raw decision (the step's schema validates it), headers and usage. */
export interface ProviderAnswer {
  readonly decision: unknown;
  readonly headers: HeaderSource | undefined;
  readonly usage: TokenUsage | undefined;
}

/** An SDK error seen as the HTTP response behind it. */
export interface HttpFailure {
  readonly status: number;
  readonly headers: HeaderSource | undefined;
}

/** How one adapter talks to its SDK. */
export interface ProviderBinding<T> {
  readonly provider: string;
  /** Makes one call, with the SDK's own retries off and `ctx.signal` passed on. */
  send(event: T, ctx: DecideContext): Promise<ProviderAnswer>;
  /** The HTTP response behind an SDK error, or undefined when there was none (a network error, a bad answer). */
  failureOf(error: unknown): HttpFailure | undefined;
}

/**
 * The limit a 429 says the request itself is over, as OpenAI words it ("Request too large for
 * gpt-4o ... on tokens per min (TPM): Limit 30000, Requested 45000"): such a request is refused
 * whenever it is sent, so waiting would hold it, and every call behind it, for ever.
 */
function overLimit(error: unknown): string | undefined {
  const stated = /request too large\b.*?\bon ([^:]+?): Limit ([\d,]+), Requested ([\d,]+)/is.exec(providerMessages(error));
  if (!stated) return undefined;
  const [, what, limit, requested] = stated;
  const count = (text: string): number => Number(text.replaceAll(',', ''));
  return count(requested!) > count(limit!) ? `${what}: limit ${count(limit!)}, requested ${count(requested!)}` : undefined;
}

/** The texts an SDK error carries: its message, the provider's own message (openai's `error.message`), the response body (the AI SDK's `responseBody`). */
function providerMessages(error: unknown): string {
  if (!(error instanceof Error)) return '';
  const { error: body, responseBody } = error as Error & { error?: { message?: unknown }; responseBody?: unknown };
  return [error.message, typeof body?.message === 'string' ? body.message : '', typeof responseBody === 'string' ? responseBody : ''].join('\n');
}

/**
 * The decide function every adapter returns: one SDK call per attempt, a 429 turned into
 * {@link RateLimited} with the delay its headers ask for (not an attempt) unless it says the
 * request itself is over the limit (a failed attempt, see {@link overLimit}), an overload waited out
 * and then failed ({@link ProviderOverloaded}), anything else a failed attempt as the SDK threw it.
 * After an overload, calls of other events wait until its delay has run out before they start;
 * with a `tokenLimit`, calls wait for room in the token budget ({@link TokenPacer}).
 */
export function providerDecide<T>(binding: ProviderBinding<T>, options: ProviderOptions = {}): DecideFn<T, unknown> {
  const rateLimitedDelayMs = options.rateLimitedDelayMs ?? DEFAULT_RATE_LIMITED_DELAY_MS;
  const overloadedDelayMs = options.overloadedDelayMs ?? DEFAULT_OVERLOADED_DELAY_MS;
  const now = options.now ?? Date.now;
  const report = options.onCall ?? (() => undefined);
  const { provider } = binding;
  // On the engine's clock: no call starts before an overload's delay has run out.
  let overloadedUntilMs = 0;
  let pacer: TokenPacer | undefined;

  /** What a failed call turns into: RateLimited, ProviderOverloaded (after its delay) or the error itself. */
  const failed = async (error: unknown, ctx: DecideContext): Promise<never> => {
    if (ctx.signal.aborted) throw error;
    const failure = binding.failureOf(error);
    const base = { provider, effectId: ctx.effectId, attempt: ctx.attempt, atMs: ctx.clock.now(), limits: rateLimitsOf(failure?.headers, now()) };
    const tooLarge = failure?.status === 429 ? overLimit(error) : undefined;
    if (tooLarge) {
      report({ ...base, outcome: 'failed', status: 429 });
      throw new Error(
        `${provider}: the request is larger than the provider's limit (${tooLarge}), so it is refused (429) every time: a failed attempt, not a rate limit; shorten the request or raise the limit`,
        { cause: error },
      );
    }
    if (failure?.status === 429) {
      const { delayMs, from } = retryDelayOf(failure.headers, now(), rateLimitedDelayMs);
      report({ ...base, outcome: 'rateLimited', status: 429, delayMs, delayFrom: from });
      throw new RateLimited(delayMs);
    }
    if (failure && OVERLOADED_STATUSES.has(failure.status)) {
      const { delayMs, from } = retryDelayOf(failure.headers, now(), overloadedDelayMs);
      overloadedUntilMs = Math.max(overloadedUntilMs, ctx.clock.now() + delayMs);
      report({ ...base, outcome: 'overloaded', status: failure.status, delayMs, delayFrom: from });
      await sleep(ctx.clock, delayMs, ctx.signal);
      throw new ProviderOverloaded(provider, failure.status, delayMs, from, { cause: error });
    }
    report({ ...base, outcome: 'failed', ...(failure ? { status: failure.status } : {}) });
    throw error;
  };

  /** Tokens a failed call used: none when refused or overloaded, else unknown (what was expected). */
  const tokensOfFailure = (error: unknown): number | undefined => {
    const status = binding.failureOf(error)?.status;
    return status === 429 || (status !== undefined && OVERLOADED_STATUSES.has(status)) ? 0 : undefined;
  };

  return async (event, ctx) => {
    const holdMs = overloadedUntilMs - ctx.clock.now();
    if (holdMs > 0) await sleep(ctx.clock, holdMs, ctx.signal);
    if (options.tokenLimit) pacer ??= new TokenPacer(options.tokenLimit, ctx.clock);
    const reservation = await pacer?.reserve(ctx.signal);
    let answer: ProviderAnswer;
    try {
      answer = await binding.send(event, ctx);
    } catch (error) {
      if (reservation) pacer!.settle(reservation, tokensOfFailure(error));
      return await failed(error, ctx);
    }
    const { decision, headers, usage } = answer;
    const usedTokens = usage && (usage.totalTokens ?? sumOf(usage.inputTokens, usage.outputTokens));
    if (reservation) pacer!.settle(reservation, usedTokens);
    // The step's own token limit (limit.tokens) holds the call at what it used.
    if (usedTokens !== undefined) ctx.reportTokens(usedTokens);
    report({
      provider,
      effectId: ctx.effectId,
      attempt: ctx.attempt,
      outcome: 'decided',
      atMs: ctx.clock.now(),
      limits: rateLimitsOf(headers, now()),
      ...(usage ? { usage } : {}),
    });
    return decision;
  };
}

function sumOf(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a + b;
}
