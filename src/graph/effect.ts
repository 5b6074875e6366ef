import type { Clock } from '../ports/clock.js';
import type { DecidedBy } from './decidedBy.js';
import type { RecordMeta } from './recordMeta.js';

/**
 * Marks what {@link effect} made: `applyOnce` takes nothing else (every function has an `apply`).
 * @internal
 */
export const madeByEffect: unique symbol = Symbol.for('orderly.effect');

/**
 * Rows of an effect's own state table, per partition. Writes are staged and recorded in the same
 * atomic batch as the effect id, so they happen once or not at all. Key rows by something of the
 * event's key (the key, an id of the event): events of one key run one after another, but those of
 * different keys run side by side (up to keyedSerial's `maxInFlight`), each effect reading its rows
 * as it starts and writing them as it ends, so a row written by two keys can lose an update.
 */
export interface StateTable {
  /** The row's value, as this attempt last put it, else as stored; undefined if it has none. */
  get<V>(row: string): V | undefined;
  /**
   * Stages the row's value, stored as its JSON once the effect returns: a `Map` or a `Set` is
   * stored as `{}`, a `Date` as its ISO text, `NaN` and `Infinity` as `null`, as `JSON.stringify`
   * makes them. `null` or `undefined` throws at once (use {@link StateTable.del}); a value with no JSON (a
   * BigInt, a cycle, a function) fails the effect's attempt, naming the row, and is retried and
   * parked as any failed attempt, while other keys go on.
   */
  put(row: string, value: unknown): void;
  /** Stages the row's removal. */
  del(row: string): void;
}

/** What an effect is told about the event it applies. */
export interface EffectContext {
  readonly key: string | null;
  /** Stable across redeliveries and replays: pass it as the idempotency key to any outside system. */
  readonly effectId: string;
  readonly record: RecordMeta;
  readonly state: StateTable;
  /** The decisions of the topology's agent steps, by step name (`ctx.decisions.decide`). */
  readonly decisions: Readonly<Record<string, unknown>>;
  /**
   * Who made each of those decisions, by step name: `agent`, `rule` (a route's rule or a shadow's
   * handler), `fallback` or `person` (a resolution). A decision made before its event was parked
   * keeps its mark through the replay.
   */
  readonly decidedBy: Readonly<Record<string, DecidedBy>>;
  /**
   * Aborted when the engine gives the event up (revoked, lost, stopping) or the call passes the
   * effect's `timeoutMs`. Pass it to outside calls; a result that comes after it is dropped.
   */
  readonly signal: AbortSignal;
  /**
   * The engine's clock: the system's on Kafka, the test driver's virtual one in tests. A stand-in
   * for an outside call waits on it (`sleep(ctx.clock, ms, ctx.signal)`), so that a test can give
   * it latency without real time passing.
   */
  readonly clock: Clock;
}

/**
 * An effect applied once per event by `applyOnce`. It may write its state table and call outside
 * systems (with `ctx.effectId` as their idempotency key); what it returns flows downstream (to
 * `.to()` and `.respond()`): `undefined` (or nothing) passes on the value it was given unchanged
 * (`{ event, decision }` after an agent step), and `null` is a record with a null value (on a
 * compacted topic, a tombstone).
 */
export interface Effect<T, R = T> {
  /** Names the effect's store: keep it stable, it keys the state across versions. */
  readonly name: string;
  apply(value: T, ctx: EffectContext): R | Promise<R>;
  /** See {@link EffectOptions.timeoutMs}. */
  readonly timeoutMs?: number;
  /** Set by {@link effect} only. */
  readonly [madeByEffect]: true;
}
