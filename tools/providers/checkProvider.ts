// One provider's row of `npm run providers:check`: its real SDK, through its adapter, as the agent
// step of a small topology on the engine with the real clock, against a stand-in server that
// allows `window.calls` calls per `window.windowMs` and answers 429 past them.
import { Outcome, RateLimited, type DecideContext, type OutcomeEvent } from '../../src/index.js';
import { runOnEngine } from './engineRun.js';
import type { SdkAdapter, StandInEvent } from './sdkAdapters.js';
import { startStandInServer } from './standInServer.js';
import { decideStandIn, Decision, standInEvents, standInTopology, type AppliedDecision } from './standInTopology.js';

export interface CheckOptions {
  readonly events: number;
  readonly window: { readonly calls: number; readonly windowMs: number };
  readonly timeoutMs: number;
}

export interface CheckRow {
  readonly provider: string;
  readonly sdkVersion: string;
  readonly packages: Readonly<Record<string, string>>;
  /** Calls the engine made of the agent step. */
  readonly calls: number;
  /** Calls the provider refused with a 429 (RATE_LIMITED outcomes). */
  readonly rateLimited: number;
  /** Requests the server saw that the engine did not make: retries inside the SDK. */
  readonly sdkRetries: number;
  /** Every event applied, with a decision that passes the step's schema and belongs to it. */
  readonly decisionsValid: boolean;
  /** No call started after a refusal before the delay it asked for had run out. */
  readonly waitedAtLeastRetryAfter: boolean;
  readonly elapsedMs: number;
}

/** A 429 as the adapter turned it into RateLimited: its delay, and when, before the engine heard it. */
interface Refusal {
  readonly effectId: string;
  readonly delayMs: number;
  readonly heardAtMs: number;
}

/**
 * True when no call started while a refusal's delay ran: from when the adapter threw the 429
 * (just before the engine heard it) for the delay the adapter threw, each refusal paired with its event's.
 */
function waitedOutEveryRefusal(refusedAt: readonly OutcomeEvent[], refusals: readonly Refusal[], calls: ReadonlyArray<{ atMs: number }>): boolean {
  const byEvent = new Map<string, Refusal[]>();
  for (const r of refusals) byEvent.set(r.effectId, [...(byEvent.get(r.effectId) ?? []), r]);
  // The engine reads its clock between hearing the 429 (heardAtMs) and reporting it (o.atMs), and the
  // millisecond may tick in between: a call may start from heardAtMs + delay on, whatever o.atMs says,
  // and calls that started up to the report were started before the engine knew of the refusal.
  return refusedAt.every((o) => {
    const refusal = byEvent.get(o.effectId)?.shift();
    if (refusal === undefined) return false;
    return calls.every((call) => call.atMs <= o.atMs || call.atMs >= refusal.heardAtMs + refusal.delayMs);
  });
}

/** What the check demands of a row: no SDK retry, every refusal waited out, valid decisions, and the window was hit. */
export function holds(row: CheckRow): boolean {
  return row.sdkRetries === 0 && row.waitedAtLeastRetryAfter && row.decisionsValid && row.rateLimited > 0;
}

export async function checkProvider(adapter: SdkAdapter, options: CheckOptions): Promise<CheckRow> {
  const server = await startStandInServer({ decide: decideStandIn, window: options.window });
  const refusals: Refusal[] = [];
  const startedMs = Date.now();
  try {
    // The client keeps its SDK's default retries: the adapter must turn them off.
    const adapterDecide = adapter.make(server.baseUrl, { schema: Decision });
    const decide = async (event: StandInEvent, ctx: DecideContext) => {
      try {
        return await adapterDecide(event, ctx);
      } catch (error) {
        if (error instanceof RateLimited) refusals.push({ effectId: ctx.effectId, delayMs: error.retryAfterMs, heardAtMs: ctx.clock.now() });
        throw error;
      }
    };
    const topology = standInTopology(decide, { attempts: 3, retryDelayMs: 200 });
    const events = standInEvents(options.events);
    const run = await runOnEngine(topology, events, options.timeoutMs);

    const refusedAt = run.outcomes.filter((o) => o.outcome === Outcome.RATE_LIMITED);
    const waited = refusedAt.length === refusals.length && waitedOutEveryRefusal(refusedAt, refusals, run.modelCalls);
    const applied = run.outputs.map((out) => JSON.parse(new TextDecoder().decode(out.value!)) as AppliedDecision);
    const decisionsValid =
      run.outcomes.filter((o) => o.outcome === Outcome.APPLIED).length === options.events &&
      applied.length === options.events &&
      applied.every((a) => Decision.safeParse(a.decision).success && a.decision.id === a.event.id);
    return {
      provider: adapter.provider,
      sdkVersion: Object.values(adapter.packages)[0]!,
      packages: adapter.packages,
      calls: run.modelCalls.length,
      rateLimited: refusedAt.length,
      sdkRetries: server.requests.length - run.modelCalls.length,
      decisionsValid,
      waitedAtLeastRetryAfter: waited,
      elapsedMs: Date.now() - startedMs,
    };
  } finally {
    await server.close();
  }
}
