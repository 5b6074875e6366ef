import type { DecideContext, DecideFn } from '../src/graph/nodes.js';
import { sleep } from '../src/ports/clock.js';
import { RateLimited } from '../src/dsl/rateLimited.js';
import { SeededRandom } from './seededRandom.js';
import { everyOptionOf, optionsProblem } from '../src/graph/optionNames.js';

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
  /** Seeds the latency draws and the choice of synchronous answers. @defaultValue 0 */
  seed?: number;
  /**
   * The share of calls answered synchronously (drawn per call from the seed): at once, without a
   * promise and without latency, as a rule or a cache answers; a 429 is then thrown at once.
   * @defaultValue 0
   */
  syncShare?: number;
  /**
   * The share of accepted calls that fail (drawn per call from the seed): the call throws, as a
   * provider's 500 or a dropped connection would, and the engine counts a failed attempt.
   * @defaultValue 0
   */
  failureShare?: number;
  /**
   * The provider is down from `fromMs` until `toMs` (virtual time): a call that starts then is
   * refused after `rejectLatencyMs`, as an overloaded provider refuses it: a 429 with Retry-After
   * `retryAfterMs` (@defaultValue 1000), whatever its limit (such a call uses none of it).
   */
  down?: { readonly fromMs: number; readonly toMs: number; readonly retryAfterMs?: number };
}

/** One call the model received. */
export interface ModelCall {
  readonly atMs: number;
  /**
   * When the call ended: answered, refused, failed or aborted through its signal (virtual ms);
   * absent while it runs, or when the engine that made it crashed first.
   */
  readonly endMs?: number;
  /** How it ended; absent while it runs. */
  readonly result?: 'answered' | 'refused' | 'failed' | 'aborted';
  /** The engine instance that made it (DecideContext.instance: `engine-1`, `engine-2`, ... on the driver). */
  readonly instance?: string;
  readonly key: string | null;
  /** The partition of the event's record. */
  readonly partition: number;
  readonly effectId: string;
  readonly accepted: boolean;
  /** Refused: the end of the provider's window, which the Retry-After points to. */
  readonly retryUntilMs?: number;
  /** Place in the model's sequence of call starts and refusals delivered. */
  readonly seq: number;
  /** Answered synchronously (see {@link FakeModelOptions.syncShare}). */
  readonly sync: boolean;
  /** Answered with `poisonDecision`: the event was declared poison. */
  readonly poison?: boolean;
}

/**
 * A 429 as the caller received it (a call it had given up, its signal aborted, receives nothing):
 * from then on no call of that caller may start before `untilMs`.
 */
export interface RefusalDelivered {
  /** The refused call, as an index into {@link ModelStats.calls}. */
  readonly call: number;
  readonly atMs: number;
  readonly untilMs: number;
  readonly seq: number;
  /** Thrown synchronously, inside the call. */
  readonly sync: boolean;
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
  /** The latest call for an effect id. */
  lastCall(effectId: string): ModelCall | undefined;
}

/** Every option of {@link FakeModelOptions}: another name is refused (a misspelt one is otherwise ignored in plain JavaScript). */
const FAKE_MODEL_OPTIONS = everyOptionOf<FakeModelOptions<unknown, unknown>>()([
  'latencyMs',
  'rejectLatencyMs',
  'limit',
  'poison',
  'poisonDecision',
  'decide',
  'seed',
  'syncShare',
  'failureShare',
  'down',
]);

/**
 * A model provider for the test driver: it takes `latencyMs` of virtual time per call, refuses
 * calls past its limit with a 429 and the Retry-After to the end of the window, and answers an
 * invalid decision for poison events. Its budget outlives crashes and restarts, as a provider's does.
 * It honours `ctx.signal`: an aborted call ends at once, with the signal's reason.
 */
export function fakeModel<T, D>(options: FakeModelOptions<T, D>): FakeModel<T, D> {
  const problem = optionsProblem(options, FAKE_MODEL_OPTIONS);
  if (problem !== undefined) throw new TypeError(`fakeModel: ${problem}`);
  const random = new SeededRandom(options.seed ?? 0);
  const answers = random.derive('answers');
  const failures = random.derive('failures');
  const latest = new Map<string, ModelCall>();
  type Mutable<T> = { -readonly [K in keyof T]: T[K] };
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

  /** While the provider is down: the Retry-After it answers. */
  const downUntil = (nowMs: number): number | undefined => {
    const down = options.down;
    if (!down || nowMs < down.fromMs || nowMs >= down.toMs) return undefined;
    return down.retryAfterMs ?? 1_000;
  };

  const answer = (event: T, ctx: DecideContext): D => {
    if (options.poison?.(event)) return (options.poisonDecision ?? { unparseable: true }) as D;
    return options.decide(event, ctx);
  };

  const decide: DecideFn<T, D> = (event, ctx) => {
    const atMs = ctx.clock.now();
    const retryAfterMs = downUntil(atMs) ?? admit(atMs);
    const sync = options.syncShare !== undefined && answers.next() < options.syncShare;
    const index = calls.length;
    const call: Mutable<ModelCall> = {
      atMs,
      ...(ctx.instance !== undefined ? { instance: ctx.instance } : {}),
      key: ctx.key,
      partition: ctx.record.partition,
      effectId: ctx.effectId,
      accepted: retryAfterMs === undefined,
      seq: seq++,
      sync,
      ...(retryAfterMs !== undefined ? { retryUntilMs: atMs + retryAfterMs } : {}),
    };
    calls.push(call);
    latest.set(ctx.effectId, call);
    const fails = retryAfterMs === undefined && options.failureShare !== undefined && failures.next() < options.failureShare;
    const ended = (result: NonNullable<ModelCall['result']>) => {
      call.endMs = ctx.clock.now();
      call.result = result;
    };
    const accept = (): D => {
      if (fails) {
        ended('failed');
        throw new Error(`the fake model failed the call for ${ctx.effectId} (failureShare ${options.failureShare})`);
      }
      ended('answered');
      if (options.poison?.(event)) call.poison = true;
      return answer(event, ctx);
    };
    const refuse = () => {
      const nowMs = ctx.clock.now();
      ended('refused');
      if (!ctx.signal.aborted) refusals.push({ call: index, atMs: nowMs, untilMs: atMs + retryAfterMs!, seq: seq++, sync });
      return new RateLimited(Math.max(0, atMs + retryAfterMs! - nowMs));
    };
    if (sync) {
      if (retryAfterMs !== undefined) throw refuse();
      return accept();
    }
    return (async () => {
      try {
        await sleep(ctx.clock, retryAfterMs !== undefined ? (options.rejectLatencyMs ?? 100) : latency(event), ctx.signal);
      } catch (error) {
        ended('aborted');
        throw error;
      }
      if (retryAfterMs !== undefined) throw refuse();
      return accept();
    })();
  };

  return {
    decide,
    stats: () => ({
      accepted: calls.filter((c) => c.accepted).length,
      refused: calls.filter((c) => !c.accepted).length,
      calls: [...calls],
      refusals: [...refusals],
    }),
    lastCall: (effectId) => latest.get(effectId),
  };
}
