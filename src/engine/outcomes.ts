import type { DecidedBy } from '../graph/nodes.js';
import type { CircuitState } from './circuitBreaker.js';

/**
 * What happened to an event at one moment. Finished outcomes let the commit pass the event;
 * RETRY, RATE_LIMITED and RESOLVED are steps on the way.
 */
export const Outcome = {
  /** Its effect was applied and recorded. Finished. */
  APPLIED: 'APPLIED',
  /**
   * Its effect was already recorded (a redelivery, or a copy with the same declared effect id), or
   * a copy of it at another offset is parked or held (applied once when the key is resolved): no
   * model call, no second effect. Finished.
   */
  DUPLICATE: 'DUPLICATE',
  /** A filter dropped it. Finished. */
  FILTERED: 'FILTERED',
  /** An attempt failed (a thrown error or a decision that failed its schema); it is tried again. */
  RETRY: 'RETRY',
  /** The model answered 429: backpressure, not an attempt; it keeps its place and waits. */
  RATE_LIMITED: 'RATE_LIMITED',
  /** Its last attempt failed: parked with its errors, its key held. Finished. */
  PARKED: 'PARKED',
  /** Its key is parked: it waits behind the parked event, durably. Finished. */
  HELD: 'HELD',
  /**
   * Written to the dead-letter topic with its error: it could not be decoded, or its attempts ran
   * out under `park({ onExhausted: 'dlq' })`. Finished.
   */
  DEAD_LETTERED: 'DEAD_LETTERED',
  /** Its attempts ran out under `park({ onExhausted: 'skip' })`: no effect, committed past. Finished. */
  SKIPPED: 'SKIPPED',
  /** A person resolved its parked key by discarding it. Finished. */
  DISCARDED: 'DISCARDED',
  /** Its outputs went out with no effect to apply (a topology without applyOnce). Finished. */
  FORWARDED: 'FORWARDED',
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

/** Outcomes after which the event needs nothing more from this partition's consumer. */
export const finishedOutcomes: ReadonlySet<Outcome> = new Set<Outcome>([
  Outcome.APPLIED,
  Outcome.DUPLICATE,
  Outcome.FILTERED,
  Outcome.PARKED,
  Outcome.HELD,
  Outcome.DEAD_LETTERED,
  Outcome.SKIPPED,
  Outcome.DISCARDED,
  Outcome.FORWARDED,
]);

/** What an outcome may add about its event. */
export interface OutcomeDetails {
  /** The error of a RETRY, PARKED, DEAD_LETTERED or SKIPPED event. */
  readonly error?: string;
  /** The attempt that failed, for RETRY, PARKED, and DEAD_LETTERED or SKIPPED after attempts. */
  readonly attempt?: number;
  /** True when the event came from a parked key's replay, not from the log. */
  readonly replayed?: boolean;
  /**
   * Who made each agent step's decision, by step name (`agent`, `rule`, `fallback`, `person`), for
   * an event that went through its steps (APPLIED, FORWARDED).
   */
  readonly decidedBy?: Readonly<Record<string, DecidedBy>>;
}

/** One entry of the engine's history. */
export interface OutcomeEvent extends OutcomeDetails {
  readonly outcome: Outcome;
  readonly atMs: number;
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly effectId: string;
}

/** How a call of the agent step ended: an answer (valid or not), a 429, a throw, or given up by a stop or rebalance. */
export type ModelCallResult = 'answered' | 'rate_limited' | 'failed' | 'aborted';

/** Everything the engine reports as it goes. Every callback is optional and must return at once. */
export interface EngineObserver {
  outcome?(event: OutcomeEvent): void;
  /** A record arrived from the log (a redelivered one too); called once per record. */
  received?(record: { readonly topic: string; readonly partition: number; readonly offset: number }): void;
  /** The engine is about to call the agent step for an event. */
  modelCall?(call: { step: string; effectId: string; topic: string; partition: number; offset: number; atMs: number; attempt: number }): void;
  /** A call of the agent step ended, `durationMs` after it started (clock port time). */
  modelCallEnded?(call: { step: string; effectId: string; atMs: number; durationMs: number; result: ModelCallResult }): void;
  /**
   * A partition's offset reached the log: `offset` is the first unfinished event (the finished
   * prefix ends there), and `finishedAbove` counts the finished offsets above it that the commit's
   * metadata lists (skipped when redelivered to a restarted or new owner).
   */
  committed?(commit: { topic: string; partition: number; offset: number; finishedAbove: number; atMs: number }): void;
  /**
   * A partition was assigned: the offset its group had committed (undefined: none) and how many
   * finished offsets above it that commit's metadata listed, which are skipped when the log
   * delivers them again (no outputs sent again, no effect lookup). `ignored` says why metadata
   * found there was not used (another consumer's, another version's, or damaged): its offsets
   * then run again as without metadata, their effects found recorded.
   */
  resumed?(resume: { topic: string; partition: number; offset: number | undefined; finishedAbove: number; ignored?: string; atMs: number }): void;
  /**
   * Effect records no event can need any more were pruned after a commit (below the committed
   * offset, or declared ids past their retention): `records` deletes written, tombstones on the
   * changelog on Kafka (docs/guarantees.md).
   */
  pruned?(pruning: { records: number; atMs: number }): void;
  /** The log refused a commit because a rebalance took its partitions (not fatal: see CommitRefusedError). */
  commitRefused?(refusal: { partitions: readonly string[]; error: string; atMs: number }): void;
  /**
   * A fallback's circuit changed state (reported as `closed` when the engine first builds it):
   * `open`, the fallback decides for the step; `half-open`, one call probes the step; `closed`, the
   * step decides again. `cause`, with an opening: how the step's last call that did not answer
   * ended (its error, or `refused (a 429)`), so that a decide function failing every call (a bug,
   * a wrong key) is told from an outage.
   */
  circuit?(change: { step: string; fallback: string; state: CircuitState; atMs: number; cause?: string }): void;
  /**
   * A durable step (`ctx.step(name, fn)`) of an agent step's call ended: `ran`, its function ran
   * and its result was journaled; `replayed`, its result came from the event's run journal and
   * the function did not run (a call after a failed attempt, a crash or a rebalance).
   */
  durableStep?(step: { step: string; name: string; effectId: string; position: number; result: 'ran' | 'replayed'; atMs: number }): void;
  /** A shadow's handler and the agent step it shadows decided an event differently (the handler's decision is the one applied). */
  shadowDisagreed?(disagreement: { step: string; shadow: string; key: string | null; effectId: string; atMs: number; agent: unknown; applied: unknown }): void;
  /** An error the engine cannot continue after (a store or log failure); it stops. */
  fatal?(error: Error): void;
}
