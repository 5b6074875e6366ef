import type { DecideContext, DecideFn } from '../src/graph/nodes.js';
import { sleep } from '../src/ports/clock.js';
import { RateLimited } from '../src/dsl/rateLimited.js';
import { SeededRandom } from './seededRandom.js';

/** Options of {@link fakeModel}. */
export interface FakeModelOptions<T, D> {
  /** How long an accepted call takes, in virtual ms: a number, or drawn per call. @defaultValue 0 */
  latencyMs?: number | ((event: T, random: SeededRandom) => number);
  /** How long a refused call (a 429) takes to come back. @defaultValue 100 */
  rejectLatencyMs?: number;
  /** The provider's limit, in fixed windows from time 0: past it a call is refused with Retry-After. */
  limit?: { calls: number; windowMs: number };
  /** Events whose decision never validates: the model answers `poisonDecision` for them. */
  poison?: (event: T) => boolean;
  /** What the model answers for a poison event. @defaultValue `{ unparseable: true }` */
  poisonDecision?: unknown;
  /** The decision for every other event. */
  decide: (event: T, ctx: DecideContext) => D;
  /** Seeds the latency draws. @defaultValue 0 */
  seed?: number;
}

/** One call the model received. */
export interface ModelCall {
  readonly atMs: number;
  readonly effectId: string;
  readonly accepted: boolean;
  /** Refused: the end of the provider's window, which the Retry-After points to. */
  readonly retryUntilMs?: number;
  /** Place in the model's sequence of call starts and refusals delivered. */
  readonly seq: number;
}

/** A 429 as the caller received it: from then on no call of that caller may start before `untilMs`. */
export interface RefusalDelivered {
  /** The refused call, as an index into {@link ModelStats.calls}. */
  readonly call: number;
  readonly atMs: number;
  readonly untilMs: number;
  readonly seq: number;
}

/** What a fake model has seen. */
export interface ModelStats {
  readonly accepted: number;
  readonly refused: number;
  readonly calls: readonly ModelCall[];
  readonly refusals: readonly RefusalDelivered[];
}

/** A rate-limited model in virtual time: use `model.decide` as an agent step's decide function. */
export interface FakeModel<T, D> {
  readonly decide: DecideFn<T, D>;
  stats(): ModelStats;
}

/**
 * A model provider for the test driver: it takes `latencyMs` of virtual time per call, refuses
 * calls past its limit with a 429 and the Retry-After to the end of the window, and answers an
 * invalid decision for poison events. Its budget outlives crashes and restarts, as a provider's does.
 */
export function fakeModel<T, D>(options: FakeModelOptions<T, D>): FakeModel<T, D> {
  const random = new SeededRandom(options.seed ?? 0);
  const windows = new Map<number, number>();
  const calls: ModelCall[] = [];
  const refusals: RefusalDelivered[] = [];
  let seq = 0;
  const latency = (event: T) => (typeof options.latencyMs === 'function' ? options.latencyMs(event, random) : (options.latencyMs ?? 0));

  const admit = (nowMs: number): number | undefined => {
    if (!options.limit) return undefined;
    const window = Math.floor(nowMs / options.limit.windowMs);
    const used = windows.get(window) ?? 0;
    if (used >= options.limit.calls) return (window + 1) * options.limit.windowMs - nowMs;
    windows.set(window, used + 1);
    return undefined;
  };

  const decide: DecideFn<T, D> = async (event, ctx) => {
    const atMs = ctx.clock.now();
    const retryAfterMs = admit(atMs);
    const index = calls.length;
    calls.push({ atMs, effectId: ctx.effectId, accepted: retryAfterMs === undefined, seq: seq++, ...(retryAfterMs !== undefined ? { retryUntilMs: atMs + retryAfterMs } : {}) });
    if (retryAfterMs !== undefined) {
      const rejectMs = options.rejectLatencyMs ?? 100;
      await sleep(ctx.clock, rejectMs);
      const nowMs = ctx.clock.now();
      refusals.push({ call: index, atMs: nowMs, untilMs: atMs + retryAfterMs, seq: seq++ });
      throw new RateLimited(Math.max(0, atMs + retryAfterMs - nowMs));
    }
    await sleep(ctx.clock, latency(event));
    if (options.poison?.(event)) return (options.poisonDecision ?? { unparseable: true }) as D;
    return options.decide(event, ctx);
  };

  return {
    decide,
    stats: () => ({
      accepted: calls.filter((c) => c.accepted).length,
      refused: calls.filter((c) => !c.accepted).length,
      calls: [...calls],
      refusals: [...refusals],
    }),
  };
}
