import { headerOf, type HeaderSource } from './headers.js';
import { parseDecimal, parseDuration, parseHttpDate, parseRfc3339 } from './timeFormats.js';

/** How long to wait after a refusal, and which header said so (`default` when none did). */
export interface RetryDelay {
  readonly delayMs: number;
  readonly from: string;
}

interface ResetHeader {
  readonly name: string;
  /** The matching remaining-budget header: a reset whose budget is 0 is the one that refused. */
  readonly remaining: string;
  /** Milliseconds from now until the reset. */
  readonly delayMs: (value: string, nowMs: number) => number | undefined;
}

const inDuration = (value: string) => parseDuration(value);
const atTime = (value: string, nowMs: number) => {
  const atMs = parseRfc3339(value);
  return atMs === undefined ? undefined : Math.max(0, atMs - nowMs);
};

/** The providers' reset headers, in the order they are tried when no budget reads 0. */
const RESET_HEADERS: readonly ResetHeader[] = [
  // OpenAI: durations until the window resets (`6m0s`, `1s`, `20ms`).
  { name: 'x-ratelimit-reset-requests', remaining: 'x-ratelimit-remaining-requests', delayMs: inDuration },
  { name: 'x-ratelimit-reset-tokens', remaining: 'x-ratelimit-remaining-tokens', delayMs: inDuration },
  // Anthropic: RFC 3339 times at which the budget is full again.
  { name: 'anthropic-ratelimit-requests-reset', remaining: 'anthropic-ratelimit-requests-remaining', delayMs: atTime },
  { name: 'anthropic-ratelimit-tokens-reset', remaining: 'anthropic-ratelimit-tokens-remaining', delayMs: atTime },
  { name: 'anthropic-ratelimit-input-tokens-reset', remaining: 'anthropic-ratelimit-input-tokens-remaining', delayMs: atTime },
  { name: 'anthropic-ratelimit-output-tokens-reset', remaining: 'anthropic-ratelimit-output-tokens-remaining', delayMs: atTime },
];

/**
 * The delay a refused or overloaded response asks for, first found of:
 * 1. `retry-after-ms` (milliseconds);
 * 2. `retry-after`, in seconds or as an HTTP date (RFC 9110), counted from `nowMs`;
 * 3. the provider's reset headers: of those whose remaining budget reads 0 the latest, else the
 *    first present of OpenAI's `x-ratelimit-reset-requests` / `-tokens` (durations) and
 *    Anthropic's `anthropic-ratelimit-requests-reset` / `-tokens-reset` (RFC 3339 times);
 * 4. `defaultMs`.
 * A header that does not parse is skipped, never guessed at. A date in the past gives 0.
 */
export function retryDelayOf(headers: HeaderSource | undefined | null, nowMs: number, defaultMs: number): RetryDelay {
  const ms = parseDecimal(headerOf(headers, 'retry-after-ms') ?? '');
  if (ms !== undefined) return { delayMs: ms, from: 'retry-after-ms' };
  const retryAfter = headerOf(headers, 'retry-after');
  if (retryAfter !== undefined) {
    const seconds = parseDecimal(retryAfter);
    if (seconds !== undefined) return { delayMs: seconds * 1_000, from: 'retry-after' };
    const atMs = parseHttpDate(retryAfter, nowMs);
    if (atMs !== undefined) return { delayMs: Math.max(0, atMs - nowMs), from: 'retry-after' };
  }
  return resetDelayOf(headers, nowMs) ?? { delayMs: defaultMs, from: 'default' };
}

function resetDelayOf(headers: HeaderSource | undefined | null, nowMs: number): RetryDelay | undefined {
  let first: RetryDelay | undefined;
  let exhausted: RetryDelay | undefined;
  for (const reset of RESET_HEADERS) {
    const value = headerOf(headers, reset.name);
    const delayMs = value === undefined ? undefined : reset.delayMs(value, nowMs);
    if (delayMs === undefined) continue;
    const found = { delayMs, from: reset.name };
    first ??= found;
    if (headerOf(headers, reset.remaining)?.trim() === '0' && delayMs > (exhausted?.delayMs ?? -1)) exhausted = found;
  }
  return exhausted ?? first;
}
