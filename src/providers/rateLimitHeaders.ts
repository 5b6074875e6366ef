import { headerOf, type HeaderSource } from './headers.js';
import { parseDecimal, parseDuration, parseRfc3339 } from './timeFormats.js';

/** One of a provider's budgets as a response reports it; a part the response left out is undefined. */
export interface Budget {
  readonly limit?: number;
  readonly remaining?: number;
  /** Milliseconds from the response until the budget is full again. */
  readonly resetMs?: number;
}

/**
 * The budgets a response's rate-limit headers report: OpenAI's `x-ratelimit-{limit,remaining,reset}-
 * {requests,tokens}` and Anthropic's `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
 * {limit,remaining,reset}`. Budgets the response does not mention are absent.
 */
export interface RateLimitHeaders {
  readonly requests?: Budget;
  readonly tokens?: Budget;
  readonly inputTokens?: Budget;
  readonly outputTokens?: Budget;
}

type BudgetName = keyof RateLimitHeaders;

const OPENAI: ReadonlyArray<[BudgetName, string]> = [
  ['requests', 'requests'],
  ['tokens', 'tokens'],
];
const ANTHROPIC: ReadonlyArray<[BudgetName, string]> = [
  ['requests', 'requests'],
  ['tokens', 'tokens'],
  ['inputTokens', 'input-tokens'],
  ['outputTokens', 'output-tokens'],
];

/** Reads the budgets from a response's headers; `nowMs` turns Anthropic's reset times into delays. */
export function rateLimitsOf(headers: HeaderSource | undefined | null, nowMs: number): RateLimitHeaders {
  const found: Partial<Record<BudgetName, Budget>> = {};
  for (const [budget, suffix] of OPENAI) {
    const read = budgetOf(
      headerOf(headers, `x-ratelimit-limit-${suffix}`),
      headerOf(headers, `x-ratelimit-remaining-${suffix}`),
      parseDuration(headerOf(headers, `x-ratelimit-reset-${suffix}`) ?? ''),
    );
    if (read) found[budget] = read;
  }
  for (const [budget, suffix] of ANTHROPIC) {
    const resetAtMs = parseRfc3339(headerOf(headers, `anthropic-ratelimit-${suffix}-reset`) ?? '');
    const read = budgetOf(
      headerOf(headers, `anthropic-ratelimit-${suffix}-limit`),
      headerOf(headers, `anthropic-ratelimit-${suffix}-remaining`),
      resetAtMs === undefined ? undefined : Math.max(0, resetAtMs - nowMs),
    );
    if (read) found[budget] ??= read;
  }
  return found;
}

function budgetOf(limit: string | undefined, remaining: string | undefined, resetMs: number | undefined): Budget | undefined {
  const budget = {
    ...optional('limit', parseDecimal(limit ?? '')),
    ...optional('remaining', parseDecimal(remaining ?? '')),
    ...optional('resetMs', resetMs),
  };
  return Object.keys(budget).length === 0 ? undefined : budget;
}

function optional<K extends string>(key: K, value: number | undefined): { [P in K]?: number } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: number };
}
