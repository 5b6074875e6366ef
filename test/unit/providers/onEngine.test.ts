// The adapters as the agent step of a topology on the engine with the real clock: an overload is
// a failed attempt whose delay is waited out (not three quick tries and a parked event), and the
// providers:check row holds on a small window; a declared token limit paces calls so that the
// provider's token budget refuses none.
import { afterEach, describe, expect, it } from 'vitest';
import { Outcome } from '../../../src/index.js';
import { checkProvider, holds } from '../../../tools/providers/checkProvider.js';
import { runOnEngine } from '../../../tools/providers/engineRun.js';
import { startStandInServer, type StandInServer } from '../../../tools/providers/standInServer.js';
import { decideStandIn, standInEvents, standInTopology } from '../../../tools/providers/standInTopology.js';
import { adapterCases } from './adapterCases.js';

const OVERLOAD_DELAY_MS = 250;

describe.each(adapterCases)('the $provider adapter on the engine', (adapter) => {
  let server: StandInServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it(`counts an overload (${adapter.overloadStatus}) as a failed attempt and waits out its delay before the next`, async () => {
    server = await startStandInServer({
      decide: decideStandIn,
      reply: (_request, index) => (index < 2 ? { status: adapter.overloadStatus, headers: { 'retry-after-ms': String(OVERLOAD_DELAY_MS) } } : undefined),
    });
    // A retry delay far below the provider's: the attempts are spaced by the overload's delay.
    const topology = standInTopology(adapter.make(server.baseUrl, {}), { attempts: 3, retryDelayMs: 10 });

    const run = await runOnEngine(topology, standInEvents(1), 20_000);

    expect(run.outcomes.map((o) => o.outcome)).toEqual([Outcome.RETRY, Outcome.RETRY, Outcome.APPLIED]);
    expect(run.outcomes[0]!.error).toMatch(/overloaded \(HTTP \d+\); waited 250 ms \(retry-after-ms\)/);
    expect(server.requests).toHaveLength(3);
    expect(run.modelCalls).toHaveLength(3);
    const arrivals = server.requests.map((r) => r.atMs);
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(OVERLOAD_DELAY_MS);
    expect(arrivals[2]! - arrivals[1]!).toBeGreaterThanOrEqual(OVERLOAD_DELAY_MS);
  });

  it('paces calls by a declared token limit: no 429 from the token budget, where without it there are', async () => {
    const tokenWindow = { tokens: 120, windowMs: 1_000 };
    // A declared call limit far above the provider's: the gate then does not learn a call budget
    // from the token 429s, so only the tokens pace the calls.
    const calls = { calls: 100, windowMs: 1_000 };
    server = await startStandInServer({ decide: decideStandIn, tokenWindow });
    const unpaced = await runOnEngine(standInTopology(adapter.make(server.baseUrl, {}), { attempts: 3, retryDelayMs: 10 }, calls), standInEvents(12), 20_000);
    expect(server.refusals.length).toBeGreaterThan(0);
    expect(unpaced.outcomes.filter((o) => o.outcome === Outcome.APPLIED)).toHaveLength(12);
    await server.close();

    server = await startStandInServer({ decide: decideStandIn, tokenWindow });
    // A call of this stand-in uses about 22 tokens; 30 are expected of each.
    const decide = adapter.make(server.baseUrl, { tokenLimit: { ...tokenWindow, expectedTokens: 30 } });
    const paced = await runOnEngine(standInTopology(decide, { attempts: 3, retryDelayMs: 10 }, calls), standInEvents(12), 20_000);

    expect(server.refusals).toEqual([]);
    expect(paced.outcomes.map((o) => o.outcome)).toEqual(Array(12).fill(Outcome.APPLIED));
    expect(server.requests).toHaveLength(12);
  });

  it("paces calls by the step's own limit.tokens, with the usage the adapter reports: no 429 from the token budget", async () => {
    server = await startStandInServer({ decide: decideStandIn, tokenWindow: { tokens: 120, windowMs: 1_000 } });
    // No tokenLimit on the adapter: the engine paces, by 30 tokens expected of a call until it reports its use (about 22).
    const limit = { calls: 100, tokens: 120, windowMs: 1_000, expectedTokens: 30 };
    const paced = await runOnEngine(standInTopology(adapter.make(server.baseUrl, {}), { attempts: 3, retryDelayMs: 10 }, limit), standInEvents(12), 20_000);

    expect(server.refusals).toEqual([]);
    expect(paced.outcomes.map((o) => o.outcome)).toEqual(Array(12).fill(Outcome.APPLIED));
    expect(server.requests).toHaveLength(12);
  });

  it('holds the providers:check row on a small window: refusals waited out, no SDK retry, valid decisions', async () => {
    const row = await checkProvider(adapter, { events: 6, window: { calls: 3, windowMs: 1_000 }, timeoutMs: 20_000 });
    expect(row).toMatchObject({ provider: adapter.provider, sdkRetries: 0, decisionsValid: true, waitedAtLeastRetryAfter: true });
    expect(row.rateLimited).toBeGreaterThan(0);
    expect(holds(row)).toBe(true);
  });
});
