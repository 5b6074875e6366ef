import { attemptsStoreOf } from '../graph/stores.js';
import type { TopicPartition } from '../ports/log.js';
import type { StoreOp } from '../ports/store.js';
import { stateKeys } from '../state/stateKeys.js';
import type { AttemptsIndexedStore } from './attemptsIndex.js';

/** One failed attempt, as it is stored and parked. */
export interface AttemptError {
  readonly attempt: number;
  readonly atMs: number;
  readonly error: string;
  /** The call answered, with a decision its schema refused (the step was up); absent when it threw or timed out. */
  readonly answered?: true;
}

/** Attempts of one event so far, kept in the store so that a crash does not reset them. */
export interface AttemptsRecord {
  readonly count: number;
  readonly errors: readonly AttemptError[];
}

export const NO_ATTEMPTS: AttemptsRecord = { count: 0, errors: [] };

/**
 * Whose attempts a record counts: an agent step's (kept in its `<step>-attempts` store) or an
 * effect's (kept in the effect's own store, beside its records).
 */
export interface AttemptsOwner {
  readonly kind: 'agentStep' | 'applyOnce';
  readonly name: string;
}

/**
 * What keeps attempts records in a topology: each of its agent steps (every one, so that an event
 * parked at a later step leaves none of that step's records behind), and its effect when a park
 * retries it.
 */
export function attemptsOwners(topology: {
  readonly agentSteps: readonly AttemptsOwner[];
  readonly applyOnce?: AttemptsOwner | undefined;
  readonly park?: unknown;
}): AttemptsOwner[] {
  const owners: AttemptsOwner[] = [...topology.agentSteps];
  if (topology.applyOnce && topology.park) owners.push(topology.applyOnce);
  return owners;
}

/** The store an owner's attempts records are kept in. */
export function attemptsStore(owner: AttemptsOwner): string {
  return owner.kind === 'agentStep' ? attemptsStoreOf(owner.name) : owner.name;
}

/**
 * Every read, write and delete of an attempts record goes through here: the record exists only
 * while an event has failed attempts at a step or an effect and has not yet ended. Writes are
 * returned as store ops, to go out with the batch that ends what they belong to.
 */
export class AttemptsRecords {
  /** Store names by owner, built once: a lookup per event builds no string. */
  private readonly stores = new Map<AttemptsOwner, string>();

  constructor(private readonly store: AttemptsIndexedStore) {}

  private storeOf(owner: AttemptsOwner): string {
    let name = this.stores.get(owner);
    if (name === undefined) this.stores.set(owner, (name = attemptsStore(owner)));
    return name;
  }

  /** Reads a partition's records of one owner, so that later lookups are answered from memory. */
  load(owner: AttemptsOwner, tp: TopicPartition): Promise<void> {
    return this.store.load(this.storeOf(owner), tp);
  }

  /** The event's failed attempts at `owner` so far. */
  of(owner: AttemptsOwner, event: { topic: string; partition: number; offset: number }): AttemptsRecord {
    return this.store.attemptsOf<AttemptsRecord>(this.storeOf(owner), event, event.offset) ?? NO_ATTEMPTS;
  }

  /** Writes the event's attempts at `owner`. */
  put(owner: AttemptsOwner, event: { topic: string; partition: number; offset: number }, record: AttemptsRecord): StoreOp {
    return { type: 'put', key: stateKeys.attemptsIn(this.storeOf(owner), event, event.offset), value: record };
  }

  /** Deletes the event's attempts at `owner`. */
  del(owner: AttemptsOwner, event: { topic: string; partition: number; offset: number }): StoreOp {
    return { type: 'del', key: stateKeys.attemptsIn(this.storeOf(owner), event, event.offset) };
  }

  /** Deletes of the event's records at every owner that has one: its end leaves none behind. */
  clear(owners: readonly AttemptsOwner[], event: { topic: string; partition: number; offset: number }): StoreOp[] {
    const ops: StoreOp[] = [];
    for (const owner of owners) if (this.of(owner, event).count > 0) ops.push(this.del(owner, event));
    return ops;
  }
}
