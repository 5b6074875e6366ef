import type { ParkedEvent, ParkedKeyState } from '../../engine/parkedKeys.js';
import { stateKeys } from '../../state/stateKeys.js';
import type { ChangelogFold } from '../changelog/changelogFold.js';

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
