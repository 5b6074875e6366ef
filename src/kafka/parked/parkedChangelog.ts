import type { ParkedEvent, ParkedKeyState } from '../../engine/parkedKeys.js';
import type { LogRecord } from '../../ports/log.js';
import { stateKeys } from '../../state/stateKeys.js';
import { recordVersion } from '../../state/storedFormat.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * A changelog folded into the state it describes: the latest value of each key, a null value (a
 * tombstone) removing the key. Values are the JSON of the stored values.
 */
export class ChangelogFold {
  private readonly values = new Map<string, unknown>();

  /** Folds records in log order; returns the keys that changed. */
  apply(records: ReadonlyArray<Pick<LogRecord, 'topic' | 'partition' | 'offset' | 'key' | 'value'> & { readonly headers?: LogRecord['headers'] }>): string[] {
    const changed: string[] = [];
    for (const record of records) {
      if (record.key === null)
        throw new Error(`changelog ${record.topic}/${record.partition}@${record.offset} has no key; a changelog record's key is the state key`);
      // Format 1 (no header) and 2 have the same shapes; a newer one is refused, naming the store.
      recordVersion(record.key, record.headers);
      if (record.value === null) this.values.delete(record.key);
      else this.values.set(record.key, parseValue(record));
      changed.push(record.key);
    }
    return changed;
  }

  get<T>(key: string): T | undefined {
    return this.values.get(key) as T | undefined;
  }

  /** The keys that start with `prefix`, in key order (the store's order). */
  keys(prefix: string): string[] {
    return [...this.values.keys()].filter((k) => k.startsWith(prefix)).sort();
  }

  get size(): number {
    return this.values.size;
  }
}

function parseValue(record: Pick<LogRecord, 'topic' | 'partition' | 'offset' | 'value'>): unknown {
  try {
    return JSON.parse(decoder.decode(record.value!));
  } catch (error) {
    throw new Error(`changelog ${record.topic}/${record.partition}@${record.offset}: its value is not UTF-8 JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
}

/** A parked key as the changelog shows it: its state, its head event and the events held behind it, in order. */
export interface ParkedKeyView extends ParkedKeyState {
  readonly topic: string;
  readonly partition: number;
  /** The event a resolution decides; missing only while the changelog is behind. */
  readonly head: ParkedEvent | undefined;
  /** The events after the head, oldest first. */
  readonly held: readonly ParkedEvent[];
  /** Events between headSeq and nextSeq that the changelog does not show (it is behind); normally 0. */
  readonly missing: number;
}

/** Which parked keys to read: the park's store name and the source topic. */
export interface ParkedScope {
  readonly park: string;
  readonly topic: string;
}

/** Every parked key of the scope in the folded changelog, by partition then key. */
export function parkedKeysOf(fold: ChangelogFold, scope: ParkedScope, partition?: number): ParkedKeyView[] {
  const prefix = partition === undefined ? topicPrefix(scope) : stateKeys.parkedKeyPrefix(scope.park, { topic: scope.topic, partition });
  const views: ParkedKeyView[] = [];
  for (const key of fold.keys(prefix)) {
    const state = fold.get<ParkedKeyState>(key)!;
    const p = partition ?? partitionOfKey(key);
    views.push(viewOf(fold, scope, p, state));
  }
  return views.sort((a, b) => a.partition - b.partition || (a.lane < b.lane ? -1 : a.lane > b.lane ? 1 : 0));
}

/** One parked key, or undefined when the changelog shows it is not parked. */
export function parkedKeyOf(fold: ChangelogFold, scope: ParkedScope, partition: number, lane: string): ParkedKeyView | undefined {
  const state = fold.get<ParkedKeyState>(stateKeys.parkedKey(scope.park, { topic: scope.topic, partition }, lane));
  return state && viewOf(fold, scope, partition, state);
}

function viewOf(fold: ChangelogFold, scope: ParkedScope, partition: number, state: ParkedKeyState): ParkedKeyView {
  const tp = { topic: scope.topic, partition };
  const events: ParkedEvent[] = [];
  let missing = 0;
  let head: ParkedEvent | undefined;
  for (let seq = state.headSeq; seq < state.nextSeq; seq += 1) {
    const event = fold.get<ParkedEvent>(stateKeys.heldEvent(scope.park, tp, state.lane, seq));
    if (!event) missing += 1;
    else if (seq === state.headSeq) head = event;
    else events.push(event);
  }
  return { ...state, topic: scope.topic, partition, head, held: events, missing };
}

function topicPrefix(scope: ParkedScope): string {
  // The prefix of partition 0 without its partition number: `parked/<park>/<topic>/`.
  return stateKeys.parkedKeyPrefix(scope.park, { topic: scope.topic, partition: 0 }).replace(/0\/$/, '');
}

function partitionOfKey(key: string): number {
  return stateKeys.partitionOf(key).partition;
}
