import { describe, expect, it } from 'vitest';
import { rateLimitsOf } from '../../../src/providers/rateLimitHeaders.js';

const NOW = Date.UTC(2026, 11, 1, 13, 0, 0);

describe('rateLimitsOf', () => {
  it("reads OpenAI's request and token budgets", () => {
    const headers = new Headers({
      'x-ratelimit-limit-requests': '60',
      'x-ratelimit-remaining-requests': '59',
      'x-ratelimit-reset-requests': '1s',
      'x-ratelimit-limit-tokens': '150000',
      'x-ratelimit-remaining-tokens': '149984',
      'x-ratelimit-reset-tokens': '6m0s',
    });
    expect(rateLimitsOf(headers, NOW)).toEqual({
      requests: { limit: 60, remaining: 59, resetMs: 1_000 },
      tokens: { limit: 150_000, remaining: 149_984, resetMs: 360_000 },
    });
  });

  it("reads Anthropic's budgets, reset times as delays from now", () => {
    const headers = {
      'anthropic-ratelimit-requests-limit': '50',
      'anthropic-ratelimit-requests-remaining': '49',
      'anthropic-ratelimit-requests-reset': '2026-12-01T13:00:01Z',
      'anthropic-ratelimit-tokens-limit': '90000',
      'anthropic-ratelimit-tokens-remaining': '0',
      'anthropic-ratelimit-tokens-reset': '2026-12-01T13:00:30Z',
      'anthropic-ratelimit-input-tokens-remaining': '70000',
      'anthropic-ratelimit-output-tokens-limit': '20000',
    };
    expect(rateLimitsOf(headers, NOW)).toEqual({
      requests: { limit: 50, remaining: 49, resetMs: 1_000 },
      tokens: { limit: 90_000, remaining: 0, resetMs: 30_000 },
      inputTokens: { remaining: 70_000 },
      outputTokens: { limit: 20_000 },
    });
  });

  it('leaves out budgets that are absent or garbage', () => {
    expect(rateLimitsOf({ 'x-ratelimit-remaining-tokens': 'many', 'anthropic-ratelimit-requests-reset': 'soon' }, NOW)).toEqual({});
    expect(rateLimitsOf(undefined, NOW)).toEqual({});
  });
});
