import type { DecidedBy } from '../graph/nodes.js';
import type { TopicPartition } from '../ports/log.js';
import type { Store, StoreOp } from '../ports/store.js';
import { stateKeys } from '../state/stateKeys.js';
import type { AttemptError } from './attemptsRecords.js';
import type { StoredEvent } from './events.js';
import type { LastCall } from './statusUpdates.js';

/** How a person resolves a parked key. Only its parked (head) event is affected; the rest replay. */
export type Resolution = { readonly decision: unknown } | { readonly retry: true } | { readonly discard: true };

/** Why an event is parked: it failed its attempts, or it waits behind one that did. */
export type ParkReason = 'POISON' | 'HELD';

/** A parked or held event as the store keeps it and the parking topic shows it. */
export interface ParkedEvent {
  readonly event: StoredEvent;
  readonly reason: ParkReason;
  readonly step: string;
  readonly attempts: number;
  readonly errors: readonly AttemptError[];
  readonly parkedAtMs: number;
  /**
   * The decisions of the agent steps before `step`, by step name: a replay uses them instead of
   * calling those steps again. Absent when there were none (and in records of older versions).
   */
  readonly decisions?: Readonly<Record<string, unknown>>;
  /**
   * Who made each of `decisions`, by step name. Absent in records of older versions, whose
   * decisions were all made by the agent steps.
   */
  readonly decidedBy?: Readonly<Record<string, DecidedBy>>;
  /**
   * With `.respond()`, each agent step's last call as the parking's response named it: a
   * redelivery (a crash between the parking and its records) sends that response again. Absent
   * for a held event, without `.respond()`, and in records of older versions.
   */
  readonly calls?: readonly LastCall[];
}

/** A parked key: its held events are `headSeq` up to (not including) `nextSeq`. */
export interface ParkedKeyState {
  readonly lane: string;
  readonly key: string | null;
  /** `parked`: waits for a person; `replaying`: resolved, its events are being replayed. */
  readonly status: 'parked' | 'replaying';
  readonly resolution?: Resolution;
  readonly headSeq: number;
  readonly nextSeq: number;
  readonly parkedAtMs: number;
}

/**
 * The parked keys of one partition, in memory and in the store. Every change is made in memory
 * first, synchronously, and returns the store ops that make it durable, so that two changes of
 * one key can never race.
 */
export class ParkedKeys {
  private readonly keys = new Map<string, ParkedKeyState>();

  /** `store` serves reads only; every write goes out as the ops these methods return. */
  constructor(
    private readonly store: Store,
    private readonly parkName: string,
    private readonly tp: TopicPartition,
  ) {}

  /** The prefix of this partition's parked keys in the store, to load them. */
  get prefix(): string {
    return stateKeys.parkedKeyPrefix(this.parkName, this.tp);
  }

  /** Loads the partition's parked keys; returns those whose replay a crash interrupted. */
  load(entries: ReadonlyArray<[string, ParkedKeyState]>): ParkedKeyState[] {
    for (const [, state] of entries) this.keys.set(state.lane, state);
    return entries.map(([, s]) => s).filter((s) => s.status === 'replaying');
  }

  get(lane: string): ParkedKeyState | undefined {
    return this.keys.get(lane);
  }

  all(): ParkedKeyState[] {
    return [...this.keys.values()];
  }

  /** The stored form of an event already parked or held (so a redelivery is not held twice). */
  findHeld(effectId: string): ParkedEvent | undefined {
    const index = this.store.get<{ lane: string; seq: number }>(stateKeys.heldIndex(this.parkName, this.tp, effectId));
    return index && this.store.get<ParkedEvent>(stateKeys.heldEvent(this.parkName, this.tp, index.lane, index.seq));
  }

  /** Parks a key with `parked` as its head. */
  park(parked: ParkedEvent): StoreOp[] {
    const { lane, key } = parked.event;
    const state: ParkedKeyState = { lane, key, status: 'parked', headSeq: 0, nextSeq: 1, parkedAtMs: parked.parkedAtMs };
    this.keys.set(lane, state);
    return [this.putState(state), ...this.putHeld(lane, 0, parked)];
  }

  /** Appends an event behind a parked key. */
  hold(held: ParkedEvent): StoreOp[] {
    const state = this.require(held.event.lane);
    const next = { ...state, nextSeq: state.nextSeq + 1 };
    this.keys.set(state.lane, next);
    return [this.putState(next), ...this.putHeld(state.lane, state.nextSeq, held)];
  }

  /** Records a person's resolution: the key starts replaying. */
  resolve(lane: string, resolution: Resolution): StoreOp[] {
    const state = this.require(lane);
    if (state.status !== 'parked') throw new Error(`key '${lane}' of ${this.tp.topic}/${this.tp.partition} is already being replayed`);
    const next: ParkedKeyState = { ...state, status: 'replaying', resolution };
    this.keys.set(lane, next);
    return [this.putState(next)];
  }

  /** The event a replay handles next: the parked one, then those held behind it. */
  head(lane: string): ParkedEvent {
    const state = this.require(lane);
    const head = this.store.get<ParkedEvent>(stateKeys.heldEvent(this.parkName, this.tp, lane, state.headSeq));
    if (!head) throw new Error(`parked key '${lane}' of ${this.tp.topic}/${this.tp.partition}: its event ${state.headSeq} is missing from the store`);
    return head;
  }

  /** The head event is done: drop it; the key is released once none is left. */
  advance(lane: string, head: ParkedEvent): StoreOp[] {
    const state = this.require(lane);
    const ops: StoreOp[] = [
      { type: 'del', key: stateKeys.heldEvent(this.parkName, this.tp, lane, state.headSeq) },
      { type: 'del', key: stateKeys.heldIndex(this.parkName, this.tp, head.event.effectId) },
    ];
    if (state.headSeq + 1 === state.nextSeq) {
      this.keys.delete(lane);
      return [...ops, { type: 'del', key: stateKeys.parkedKey(this.parkName, this.tp, lane) }];
    }
    const { resolution: _done, ...rest } = state;
    const next: ParkedKeyState = { ...rest, headSeq: state.headSeq + 1 };
    this.keys.set(lane, next);
    return [...ops, this.putState(next)];
  }

  /** The head event failed again during its replay: the key is parked again, with it at the head. */
  repark(lane: string, head: ParkedEvent): StoreOp[] {
    const state = this.require(lane);
    const { resolution: _done, ...rest } = state;
    const next: ParkedKeyState = { ...rest, status: 'parked', parkedAtMs: head.parkedAtMs };
    this.keys.set(lane, next);
    return [this.putState(next), { type: 'put', key: stateKeys.heldEvent(this.parkName, this.tp, lane, state.headSeq), value: head }];
  }

  private putState(state: ParkedKeyState): StoreOp {
    return { type: 'put', key: stateKeys.parkedKey(this.parkName, this.tp, state.lane), value: state };
  }

  private putHeld(lane: string, seq: number, parked: ParkedEvent): StoreOp[] {
    return [
      { type: 'put', key: stateKeys.heldEvent(this.parkName, this.tp, lane, seq), value: parked },
      { type: 'put', key: stateKeys.heldIndex(this.parkName, this.tp, parked.event.effectId), value: { lane, seq } },
    ];
  }

  private require(lane: string): ParkedKeyState {
    const state = this.keys.get(lane);
    if (!state) throw new Error(`key '${lane}' of ${this.tp.topic}/${this.tp.partition} is not parked`);
    return state;
  }
}
