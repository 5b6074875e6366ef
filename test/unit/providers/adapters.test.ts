// Each adapter against the stand-in server with its real SDK: decisions through JSON mode, 429s
// in every header form, overloads, other errors; the server counts requests, so a retry the SDK
// made on its own would show.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { RateLimited } from '../../../src/index.js';
import { ProviderOverloaded } from '../../../src/providers/providerOverloaded.js';
import type { ProviderCall } from '../../../src/providers/providerDecide.js';
import { startStandInServer, type StandInOptions, type StandInServer } from '../../../tools/providers/standInServer.js';
import { adapterCases, decideContext } from './adapterCases.js';

const NOW = Date.UTC(2026, 11, 1, 13, 0, 0);
const Decision = z.object({ action: z.enum(['approve', 'reject']), id: z.string() });
const decideStandIn = (prompt: string) => ({ action: 'approve', id: (JSON.parse(prompt) as { id: string }).id });

describe.each(adapterCases)('the $provider adapter', (adapter) => {
  let server: StandInServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  const start = async (options: Partial<StandInOptions> = {}) => (server = await startStandInServer({ decide: decideStandIn, ...options }));

  it('returns the decision from structured-output mode, and reports the usage and budgets', async () => {
    const { baseUrl, requests } = await start();
    const calls: ProviderCall[] = [];
    const decide = adapter.make(baseUrl, { schema: Decision, onCall: (call) => calls.push(call) }, 3);

    await expect(decide({ id: 'e-1' }, decideContext())).resolves.toEqual({ action: 'approve', id: 'e-1' });

    expect(requests).toHaveLength(1);
    expect(adapter.schemaInBody(requests[0]!.body)).toMatchObject({ type: 'object', required: ['action', 'id'] });
    expect(adapter.schemaInBody(requests[0]!.body)).not.toHaveProperty('$schema');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ outcome: 'decided', usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number) } });
    expect(calls[0]!.usage!.totalTokens).toBe(calls[0]!.usage!.inputTokens! + calls[0]!.usage!.outputTokens!);
    expect(calls[0]!.limits.tokens).toMatchObject({ limit: 100_000, remaining: 100_000 - calls[0]!.usage!.totalTokens! });
    expect(calls[0]!.limits.requests).toMatchObject({ remaining: expect.any(Number) });
  });

  it('asks for plain JSON without a schema', async () => {
    const { baseUrl, requests } = await start();
    await expect(adapter.make(baseUrl, {})({ id: 'e-2' }, decideContext())).resolves.toEqual({ action: 'approve', id: 'e-2' });
    expect(adapter.schemaInBody(requests[0]!.body)).toBeUndefined();
  });

  const forms: Array<[string, (nowMs: number) => Record<string, string>, number]> = [
    ['retry-after-ms', () => ({ 'retry-after-ms': '2500', 'retry-after': '9' }), 2_500],
    ['retry-after in seconds', () => ({ 'retry-after': '3' }), 3_000],
    ['retry-after as an HTTP date', (nowMs) => ({ 'retry-after': new Date(nowMs + 4_000).toUTCString() }), 4_000],
    ["the provider's reset header", (nowMs) => adapter.resetHeader(1_500, nowMs), 1_500],
    ['no delay header (the default)', () => ({}), 777],
  ];
  it.each(forms)('turns a 429 with %s into RateLimited with its delay, in one request although the client retries', async (_form, headers, delayMs) => {
    const { baseUrl, requests } = await start({ reply: () => ({ status: 429, headers: headers(NOW) }) });
    const calls: ProviderCall[] = [];
    const decide = adapter.make(baseUrl, { now: () => NOW, rateLimitedDelayMs: 777, onCall: (call) => calls.push(call) }, 3);

    const error = await decide({ id: 'e-3' }, decideContext()).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(RateLimited);
    expect((error as RateLimited).retryAfterMs).toBe(delayMs);
    expect(requests).toHaveLength(1);
    expect(calls).toMatchObject([{ outcome: 'rateLimited', status: 429, delayMs }]);
  });

  it.each([
    'Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 45000. The input or output tokens must be reduced.',
    'Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30,000, Requested 45,000.',
  ])('fails the attempt of a 429 that says the request is over the limit itself (it would be refused every time), not RateLimited: %s', async (message) => {
    const { baseUrl, requests } = await start({ reply: () => ({ status: 429, headers: { 'retry-after': '3' }, message }) });
    const calls: ProviderCall[] = [];
    const error = await adapter
      .make(
        baseUrl,
        { onCall: (call) => calls.push(call) },
        3,
      )({ id: 'e-7' }, decideContext())
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).not.toBeInstanceOf(RateLimited);
    expect((error as Error).message).toBe(
      `${adapter.provider}: the request is larger than the provider's limit (tokens per min (TPM): limit 30000, requested 45000), so it is refused (429) every time: a failed attempt, not a rate limit; shorten the request or raise the limit`,
    );
    expect(requests).toHaveLength(1);
    expect(calls).toMatchObject([{ outcome: 'failed', status: 429 }]);
  });

  it('keeps a 429 that is over the window, not the request, as RateLimited (Requested not above Limit)', async () => {
    const message = 'Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.';
    const { baseUrl } = await start({ reply: () => ({ status: 429, headers: { 'retry-after': '3' }, message }) });
    const error = await adapter
      .make(
        baseUrl,
        {},
        3,
      )({ id: 'e-8' }, decideContext())
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(RateLimited);
  });

  it(`waits out an overload (${adapter.overloadStatus}), fails the attempt, and holds other calls until its delay has passed`, async () => {
    const { baseUrl, requests } = await start({
      reply: (_r, index) => (index === 0 ? { status: adapter.overloadStatus, headers: { 'retry-after-ms': '300' } } : undefined),
    });
    let second: Promise<unknown> | undefined;
    const decide = adapter.make(baseUrl, {
      onCall: (call) => {
        // Another event's call, started while the provider is known to be overloaded.
        if (call.outcome === 'overloaded') second = decide({ id: 'e-5' }, decideContext());
      },
    });
    const startedMs = Date.now();

    const error = await decide({ id: 'e-4' }, decideContext()).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(ProviderOverloaded);
    expect(error).not.toBeInstanceOf(RateLimited);
    expect(error).toMatchObject({ status: adapter.overloadStatus, delayMs: 300, delayFrom: 'retry-after-ms' });
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(300);
    await expect(second).resolves.toEqual({ action: 'approve', id: 'e-5' });
    expect(requests).toHaveLength(2);
    expect(requests[1]!.atMs - requests[0]!.atMs).toBeGreaterThanOrEqual(300);
  });

  it.each([400, 500] as const)('leaves a %i as a failed attempt with the SDK error, in one request', async (status) => {
    const { baseUrl, requests } = await start({ reply: () => ({ status }) });
    const error = await adapter
      .make(baseUrl, {})({ id: 'e-6' }, decideContext())
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(RateLimited);
    expect(error).not.toBeInstanceOf(ProviderOverloaded);
    expect(requests).toHaveLength(1);
  });

  it('fails an answer that is not JSON', async () => {
    const { baseUrl } = await start({ reply: () => ({ status: 200, text: 'I would approve it.' }) });
    await expect(adapter.make(baseUrl, { schema: Decision })({ id: 'e-7' }, decideContext())).rejects.toThrow();
  });

  it('gives the call up when the engine aborts it, without a retry', async () => {
    const { baseUrl, requests } = await start({ latencyMs: 2_000 });
    const abort = new AbortController();
    const call = adapter.make(baseUrl, {})({ id: 'e-8' }, decideContext(abort.signal));
    await vi.waitFor(() => expect(requests).toHaveLength(1));
    abort.abort(new Error('revoked'));
    await expect(call).rejects.toThrow();
    expect(requests).toHaveLength(1);
  });
});
