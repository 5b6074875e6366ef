import { effect, Outcome, stream, type Decided, type CallLimit } from '../src/index.js';
import { TopologyTestDriver } from '../testkit/driver.js';
import { fakeModel, type ModelCall } from '../testkit/fakeModel.js';
import type { Progress } from './progress.js';

/** The provider of the scenario: 60 calls per fixed 10-s window, 4 s per call. */
const providerLimit: CallLimit = { calls: 60, windowMs: 10_000 };
const latencyMs = 4_000;
const keys = 1_000;
const eventsPerKey = 10;
const partitions = 4;
const maxInFlight = 16;

/** How the provider's budget was used over a run. */
export interface WindowUtilization {
  /** Whether the agent step declared the provider's limit; if not, the engine knows only the Retry-After of each 429. */
  readonly declaredLimit: boolean;
  readonly events: number;
  readonly accepted: number;
  /** Calls refused with a 429, over the whole run. */
  readonly rateLimited: number;
  /** Windows from time 0 up to, not including, the window of the last call (the last one is partial: the stream ran out). */
  readonly fullWindows: number;
  /** Accepted calls in the full windows ÷ (fullWindows × the limit). */
  readonly windowUtilization: number;
  /** Full windows with fewer accepted calls than the limit allows. */
  readonly underusedWindows: number;
  /** 429s in the full windows ÷ fullWindows. */
  readonly rateLimitedPerWindow: number;
  /** The most 429s in any one window, the last one included. */
  readonly maxRateLimitedInAWindow: number;
  /** Virtual time at which the last event was applied. */
  readonly virtualEndMs: number;
  /** What the budget alone allows: events ÷ calls per window × window length. */
  readonly lowerBoundMs: number;
  readonly wallMs: number;
}

interface Ticket {
  readonly key: string;
  readonly n: number;
}

/**
 * Runs 1,000 keys × 10 events through a rate-limited fake model (60 calls per 10-s window, 4 s a
 * call; 4 partitions, maxInFlight 16, memory-level state) and counts, from the model's own record
 * of its calls, how much of each window's budget was used and how many calls it refused.
 */
export async function measureWindowUtilization(progress: Progress, declaredLimit: boolean): Promise<WindowUtilization> {
  const model = fakeModel<Ticket, { route: string }>({ latencyMs, limit: providerLimit, decide: (t) => ({ route: `queue-${t.n % 3}` }) });
  const topology = stream<Ticket>('tickets')
    .keyedSerial({ maxInFlight })
    .agentStep('route', model.decide, declaredLimit ? { limit: providerLimit } : {})
    .park({ attempts: 3 })
    .applyOnce(
      effect('routes', ({ event, decision }: Decided<Ticket, { route: string }>, { state }) => {
        state.put(String(event.n), decision.route);
      }),
    )
    .build();
  const driver = new TopologyTestDriver(topology, { partitions });
  try {
    const input = driver.createInputTopic<Ticket>('tickets');
    const events = keys * eventsPerKey;
    for (let n = 0; n < events; n++) input.pipeInput(`customer-${n % keys}`, { key: `customer-${n % keys}`, n });
    const phase = progress.phase(`window use (${declaredLimit ? 'declared' : 'Retry-After'})`, events, 'events');
    const ticker = setInterval(() => phase.update(model.stats().accepted), 250);
    const started = performance.now();
    try {
      await driver.runUntilIdle();
    } finally {
      clearInterval(ticker);
    }
    const wallMs = Math.round(performance.now() - started);
    const applied = driver.history().filter((h) => h.outcome === Outcome.APPLIED);
    if (applied.length !== events) throw new Error(`window utilization: ${applied.length} of ${events} events were applied`);
    const result = {
      declaredLimit,
      events,
      ...perWindow(model.stats().calls),
      virtualEndMs: Math.max(...applied.map((h) => h.atMs)),
      lowerBoundMs: Math.round((events / providerLimit.calls) * providerLimit.windowMs),
      wallMs,
    };
    phase.finish(`utilization ${result.windowUtilization.toFixed(3)}, ${result.rateLimitedPerWindow.toFixed(2)} 429s per window`);
    return result;
  } finally {
    await driver.close();
  }
}

/** Counts accepted and refused calls in each fixed window of the provider, and sums the full ones. */
function perWindow(calls: readonly ModelCall[]) {
  const sparse: Array<{ accepted: number; refused: number }> = [];
  for (const call of calls) {
    const w = (sparse[Math.floor(call.atMs / providerLimit.windowMs)] ??= { accepted: 0, refused: 0 });
    if (call.accepted) w.accepted += 1;
    else w.refused += 1;
  }
  const windows = Array.from(sparse, (w) => w ?? { accepted: 0, refused: 0 });
  const full = windows.slice(0, -1);
  const sum = (count: (w: { accepted: number; refused: number }) => number) => full.reduce((s, w) => s + count(w), 0);
  return {
    accepted: calls.filter((c) => c.accepted).length,
    rateLimited: calls.filter((c) => !c.accepted).length,
    fullWindows: full.length,
    windowUtilization: sum((w) => w.accepted) / (full.length * providerLimit.calls),
    underusedWindows: full.filter((w) => w.accepted < providerLimit.calls).length,
    rateLimitedPerWindow: sum((w) => w.refused) / full.length,
    maxRateLimitedInAWindow: Math.max(0, ...windows.map((w) => w.refused)),
  };
}
