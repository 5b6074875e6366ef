// The ai-sdk adapter judges a RetryError by its last error: should the SDK retry after all (a
// model that retries inside, a future default), a 429 behind it is still RateLimited.
import { APICallError, RetryError } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { RateLimited } from '../../../src/index.js';
import { aiSdkDecide } from '../../../src/providers/aiSdk.js';
import { decideContext } from './adapterCases.js';

const refusal = (statusCode: number, responseHeaders: Record<string, string>) =>
  new APICallError({ message: `stand-in ${statusCode}`, url: 'http://127.0.0.1/v1/chat/completions', requestBodyValues: {}, statusCode, responseHeaders });

const throwing = (error: unknown) =>
  aiSdkDecide<{ id: string }>({
    model: new MockLanguageModelV3({
      doGenerate: async () => {
        throw error;
      },
    }),
    messages: (event) => [{ role: 'user', content: JSON.stringify(event) }],
  });

describe('the ai-sdk adapter and RetryError', () => {
  it('turns a RetryError whose last error is a 429 into RateLimited with its delay', async () => {
    const error = new RetryError({
      message: 'failed after 3 attempts',
      reason: 'maxRetriesExceeded',
      errors: [refusal(500, {}), refusal(429, { 'retry-after': '2' })],
    });
    const thrown = await Promise.resolve(throwing(error)({ id: 'e-1' }, decideContext())).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(thrown).toBeInstanceOf(RateLimited);
    expect((thrown as RateLimited).retryAfterMs).toBe(2_000);
  });

  it('leaves a RetryError whose last error has no status as a failed attempt', async () => {
    const error = new RetryError({ message: 'failed', reason: 'maxRetriesExceeded', errors: [new Error('socket hang up')] });
    await expect(Promise.resolve(throwing(error)({ id: 'e-2' }, decideContext()))).rejects.toBe(error);
  });
});
