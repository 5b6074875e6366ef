import { describe, expect, it } from 'vitest';
import { retryDelayOf } from '../../../src/providers/retryDelay.js';

const NOW = Date.UTC(2026, 11, 1, 13, 0, 0);
const DEFAULT_MS = 1_234;
const delay = (headers: Record<string, string>) => retryDelayOf(headers, NOW, DEFAULT_MS);

describe('retryDelayOf', () => {
  it('takes retry-after-ms first', () => {
    expect(delay({ 'retry-after-ms': '1500', 'retry-after': '9' })).toEqual({ delayMs: 1_500, from: 'retry-after-ms' });
  });

  it('takes retry-after in seconds, then as an HTTP date', () => {
    expect(delay({ 'retry-after': '7' })).toEqual({ delayMs: 7_000, from: 'retry-after' });
    expect(delay({ 'retry-after': 'Tue, 01 Dec 2026 13:00:05 GMT' })).toEqual({ delayMs: 5_000, from: 'retry-after' });
    expect(delay({ 'retry-after': 'Tue, 01 Dec 2026 12:59:00 GMT' })).toEqual({ delayMs: 0, from: 'retry-after' });
  });

  it("takes OpenAI's reset durations", () => {
    expect(delay({ 'x-ratelimit-reset-requests': '6m0s' })).toEqual({ delayMs: 360_000, from: 'x-ratelimit-reset-requests' });
    expect(delay({ 'x-ratelimit-reset-tokens': '20ms' })).toEqual({ delayMs: 20, from: 'x-ratelimit-reset-tokens' });
  });

  it("takes Anthropic's reset times", () => {
    expect(delay({ 'anthropic-ratelimit-requests-reset': '2026-12-01T13:00:02Z' })).toEqual({ delayMs: 2_000, from: 'anthropic-ratelimit-requests-reset' });
  });

  it('prefers the reset of the budget that reads 0, the latest of several', () => {
    const openai = {
      'x-ratelimit-reset-requests': '1s',
      'x-ratelimit-remaining-requests': '4',
      'x-ratelimit-reset-tokens': '30s',
      'x-ratelimit-remaining-tokens': '0',
    };
    expect(delay(openai)).toEqual({ delayMs: 30_000, from: 'x-ratelimit-reset-tokens' });
    const anthropic = {
      'anthropic-ratelimit-requests-reset': '2026-12-01T13:00:09Z',
      'anthropic-ratelimit-requests-remaining': '0',
      'anthropic-ratelimit-tokens-reset': '2026-12-01T13:00:03Z',
      'anthropic-ratelimit-tokens-remaining': '0',
    };
    expect(delay(anthropic)).toEqual({ delayMs: 9_000, from: 'anthropic-ratelimit-requests-reset' });
  });

  it('skips garbage and falls through to the next source, then to the default', () => {
    expect(delay({ 'retry-after-ms': 'soon', 'retry-after': '3' })).toEqual({ delayMs: 3_000, from: 'retry-after' });
    expect(delay({ 'retry-after': 'later', 'x-ratelimit-reset-requests': '2s' })).toEqual({ delayMs: 2_000, from: 'x-ratelimit-reset-requests' });
    expect(delay({ 'retry-after': '-4', 'x-ratelimit-reset-requests': 'tomorrow', 'anthropic-ratelimit-requests-reset': '12' })).toEqual({
      delayMs: DEFAULT_MS,
      from: 'default',
    });
    expect(delay({})).toEqual({ delayMs: DEFAULT_MS, from: 'default' });
    expect(retryDelayOf(undefined, NOW, DEFAULT_MS)).toEqual({ delayMs: DEFAULT_MS, from: 'default' });
  });

  it('reads a fetch Headers object as well as a plain one', () => {
    expect(retryDelayOf(new Headers({ 'Retry-After': '2' }), NOW, DEFAULT_MS)).toEqual({ delayMs: 2_000, from: 'retry-after' });
  });
});
