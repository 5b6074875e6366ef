import type { TopicPartition } from '../ports/log.js';
import type { EffectHorizon } from './effectHorizon.js';
import type { Store } from '../ports/store.js';
import { stateKeys } from '../state/stateKeys.js';
import type { EffectRecord } from './outputs.js';

/**
 * Positions in a partition's ring of effect records, by default. A partition's ring holds at most
 * this many records, so its effect records take bounded room without a delete (nor, on Kafka, a
 * tombstone) per event; when an event finds its position taken by a record that a commit now
 * would pass, the engine commits at once, so that positions come free.
 */
export const RING_SIZE = 16_384;
/** Not read yet: the position's record is looked up in the store at its first claim. */
const UNKNOWN = -2;
/** No record at the position. */
const EMPTY = -1;

/**
 * A partition's effect records with ids derived from offsets, kept at `offset % RING_SIZE` (see
 * docs/guarantees.md, "How long effect records are kept"). A record is needed only while its
 * event can be delivered again, that is while its offset is at or past the committed offset. So
 * an event's record takes its position only when the record there is below the committed offset
 * (or there is none); otherwise (an earlier event at the same position still unfinished, or not
 * committed yet) the engine records it under its effect id, as a replay's record, and prunes it
 * after the commit.
 *
 * A lookup reads the record at the event's position and takes it only if it is this offset's and
 * this key's.
 */
export class EffectRing {
  /**
   * The offset last recorded (or about to be) at each position, as this task knows it: its own
   * claims, whose writes may not have landed yet, and what it read from the store. Made at the
   * first claim, 8 bytes a position.
   */
  private claims: Float64Array | undefined;
  private readonly prefix: string;

  constructor(
    private readonly store: Store,
    effectStore: string,
    tp: TopicPartition,
    /** Its positions: the same for as long as the partition's state lives (see EngineOptions.effectRingSize). */
    readonly size: number,
    /** The partition's effect horizon, loaded before any claim: the records found in the store lie below it. */
    private readonly horizon: EffectHorizon,
    /** The partition's committed offset (exclusive; undefined: never committed). */
    private readonly committed: () => number | undefined,
    /** Whether records are written here (EngineOptions.effectRing): the ring is read either way. */
    private readonly recording: boolean,
    /** Told when a claim is refused, with the offset of the record not committed yet that holds the position. */
    private readonly onTaken: (holder: number) => void,
  ) {
    this.prefix = stateKeys.ringPartitionPrefix(effectStore, tp);
  }

  /**
   * The effect record of the event at `offset` with this key, if its position holds it. The key
   * is compared too: records are never deleted, so after a topic was deleted and made again (its
   * offsets from 0 again) the ring holds the old topic's last records.
   */
  recorded(offset: number, key: string | null): EffectRecord | undefined {
    const record = this.store.get<EffectRecord>(this.keyOf(offset % this.size));
    return record !== undefined && record.offset === offset && record.key === key ? record : undefined;
  }

  /**
   * The key to record the effect of the event at `offset` under, if its position is free with the
   * partition committed as it is now; undefined if it is not (or records are not written here). A
   * claim is final: the position is this event's from now on, even if its write fails (its
   * partition is then reset, and its next task reads the store again).
   */
  claim(offset: number): string | undefined {
    if (!this.recording) return undefined;
    const committed = this.committed();
    const position = offset % this.size;
    const claims = (this.claims ??= new Float64Array(this.size).fill(UNKNOWN));
    let current = claims[position]!;
    if (current === UNKNOWN) current = this.mayHoldNeeded(offset, committed) ? (this.store.get<EffectRecord>(this.keyOf(position))?.offset ?? EMPTY) : EMPTY;
    if (current !== EMPTY && (committed === undefined || current >= committed)) {
      claims[position] = current;
      this.onTaken(current);
      return undefined;
    }
    claims[position] = offset;
    return this.keyOf(position);
  }

  /**
   * Whether the position of `offset` may hold a record, written before this task, that an event
   * can still need (at or past `committed`): only then is it read from the store (a LevelDB read
   * when it is not cached). Such a record lies below the horizon loaded at assignment, so a
   * partition that never recorded anything, or whose committed offset passed that horizon, reads
   * nothing.
   */
  private mayHoldNeeded(offset: number, committed: number | undefined): boolean {
    const before = this.horizon.recordedBefore;
    const from = committed ?? 0;
    if (before <= from) return false;
    if (before - from >= this.size) return true;
    // The one offset of [from, from + size) at this position.
    const candidate = from + ((((offset - from) % this.size) + this.size) % this.size);
    return candidate < before;
  }

  private keyOf(position: number): string {
    return `${this.prefix}${position}`;
  }
}
