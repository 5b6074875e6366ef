import { isPartitionReset, type TopicPartition } from '../ports/log.js';
import type { Store } from '../ports/store.js';
import { stateKeys } from '../state/stateKeys.js';
import type { EventEnd } from './eventEnd.js';
import type { StateWriter } from './stateWriter.js';

/** Offsets reserved past the one received: one horizon write per this many events of a partition. */
export const HORIZON_STEP = 10_000;

/**
 * A partition's effect horizon: an offset at and past which no event of the partition has an
 * effect record (with ids derived from offsets). Events past it are new to every worker that ever
 * ran the partition, so their effect lookup would find nothing: it is skipped. Every other event
 * is looked up as before.
 *
 * Why it holds: before an event is run, its partition's horizon is past its offset in the store.
 * `received` reserves `HORIZON_STEP` offsets ahead through the engine's state writer, and that
 * write is queued before the event's own writes, which land in order after it (in one LevelDB
 * batch or a later one, and in the same order in the changelog). So any store that holds an
 * effect record also holds a horizon past its offset. The horizon read when the partition is
 * taken over counts; the reservations made since only keep it ahead.
 *
 * A partition with effect records but no horizon (state written before horizons existed) is
 * looked up event by event, and gets no horizon: its old records could lie past any new one.
 */
export class EffectHorizon {
  /** Offsets at or past this have no effect record; Infinity: look every event up. */
  private loaded = Number.POSITIVE_INFINITY;
  /** The horizon written so far (or on its way); reserve again when an offset reaches it. */
  private reserved = Number.POSITIVE_INFINITY;
  private readonly key: string;

  constructor(
    private readonly store: Store,
    private readonly writer: StateWriter,
    private readonly end: EventEnd,
    private readonly effectStore: string,
    private readonly tp: TopicPartition,
    private readonly onFatal: (error: Error) => void,
  ) {
    this.key = stateKeys.horizon(effectStore, tp);
  }

  /** Reads the horizon of the partition, once its state is restored and before any event runs. */
  async load(): Promise<void> {
    const stored = this.store.get<number>(this.key);
    if (stored !== undefined) {
      this.loaded = this.reserved = stored;
      return;
    }
    // Records under effect ids, or in the ring: a partition whose old records were all pruned
    // still has ring records written since, with no horizon past them.
    for (const prefix of [stateKeys.effectPartitionPrefix(this.effectStore, this.tp), stateKeys.ringPartitionPrefix(this.effectStore, this.tp)]) {
      if ((await this.store.entries(prefix, { limit: 1 })).length > 0) return;
    }
    // Nothing recorded yet: every event is new, and the first one received writes a horizon.
    this.loaded = this.reserved = 0;
  }

  /** An event was received: keeps the stored horizon past its offset, before the event can write anything. */
  received(offset: number): void {
    if (offset < this.reserved) return;
    this.reserved = offset + HORIZON_STEP;
    const write = [{ type: 'put' as const, key: this.key, value: this.reserved }];
    // In a unit of its partition, entered at once unless a commit or a reset is under way: then it
    // waits as the event's own writes do, and still goes before them.
    this.end
      .atomically(this.tp, () => this.writer.write(write))
      .catch((error: unknown) => {
        // Taken back by the log: the partition is reset, and its next task reads the horizon again.
        if (isPartitionReset(error)) return;
        // Its events' effects could be recorded past the stored horizon: nothing may run on.
        this.onFatal(
          new Error(`the effect horizon of ${this.tp.topic}/${this.tp.partition} could not be written: ${(error as Error).message}`, { cause: error }),
        );
      });
  }

  /** Every effect record written before this task (by an earlier one, another worker or an older version) lies below this offset; Infinity: anywhere. */
  get recordedBefore(): number {
    return this.loaded;
  }

  /** True if the event's effect cannot be recorded anywhere: no lookup needed. */
  beyond(offset: number): boolean {
    return offset >= this.loaded;
  }
}
