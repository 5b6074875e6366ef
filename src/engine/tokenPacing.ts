import { isRateLimited } from '../graph/rateLimited.js';
import type { AgentStepNode, CallLimit, DecideContext, DecideFn, RateLimit } from '../graph/nodes.js';
import type { Clock } from '../ports/clock.js';
import { TokenPacer } from './tokenPacer.js';

/** The calls part of a step's limit, for the rate gate; none when it limits tokens only. */
export function callLimitOf(limit: RateLimit | undefined): CallLimit | undefined {
  return limit?.calls === undefined ? undefined : { calls: limit.calls, windowMs: limit.windowMs };
}

/** The token pacing of each step whose limit declares tokens, by step name: each step paces its own calls. */
export function tokenPacingsOf(steps: readonly AgentStepNode[], clock: Clock): Map<string, TokenPacing> {
  const pacings = new Map<string, TokenPacing>();
  for (const step of steps) if (step.limit?.tokens !== undefined) pacings.set(step.name, new TokenPacing({ ...step.limit, tokens: step.limit.tokens }, clock));
  return pacings;
}

/**
 * Paces an agent step's calls by its declared `limit.tokens`: each call waits for room for its
 * expected tokens, holds them while it runs, then holds what it reported through
 * `ctx.reportTokens` (or what was expected, if it reported nothing; nothing if it was refused with
 * a 429) for one window after it ended.
 */
export class TokenPacing {
  private readonly pacer: TokenPacer;

  constructor(limit: RateLimit & { tokens: number }, clock: Clock) {
    this.pacer = new TokenPacer(
      { tokens: limit.tokens, windowMs: limit.windowMs, ...(limit.expectedTokens !== undefined ? { expectedTokens: limit.expectedTokens } : {}) },
      clock,
    );
  }

  /** Calls `decide` once there is room, with a context whose `reportTokens` records the call's use. */
  async call(decide: DecideFn<unknown, unknown>, value: unknown, ctx: DecideContext): Promise<unknown> {
    const reservation = await this.pacer.reserve(ctx.signal);
    let reported: number | undefined;
    try {
      const answer = await decide(value, { ...ctx, reportTokens: (tokens) => (reported = tokens) });
      this.pacer.settle(reservation, reported);
      return answer;
    } catch (error) {
      this.pacer.settle(reservation, isRateLimited(error) ? 0 : reported);
      throw error;
    }
  }
}
