import type { ChangelogSource } from '../../../../src/kafka/changelog/changelogStore.js';
import { partitionId, type OutRecord, type TopicPartition } from '../../../../src/ports/log.js';

/**
 * Partitioned, append-only changelog topics in memory, read as Kafka's would be; {@link compact}
 * removes what Kafka's log cleaner may (offsets stay: a removed record leaves a hole).
 */
export class MemoryChangelog implements ChangelogSource {
  readonly topics = new Map<string, OutRecord[]>();
  /** Offsets the cleaner removed, by partition id: a read skips them. */
  readonly removed = new Map<string, Set<number>>();
  /** Fails the next write: with this error, or 'broker down'. */
  failNext: boolean | Error = false;
  /** Records a read hands over per poll. */
  pollSize = Number.POSITIVE_INFINITY;

  produce = async (records: readonly OutRecord[]): Promise<void> => {
    if (this.failNext) {
      const error = this.failNext === true ? new Error('broker down') : this.failNext;
      this.failNext = false;
      throw error;
    }
    for (const r of records) this.partition({ topic: r.topic, partition: r.partition! }).push(r);
  };

  partition(tp: TopicPartition): OutRecord[] {
    const id = partitionId(tp);
    if (!this.topics.has(id)) this.topics.set(id, []);
    return this.topics.get(id)!;
  }

  async ends(tp: TopicPartition) {
    return { low: 0, end: this.partition(tp).length };
  }

  async read(
    ranges: ReadonlyArray<TopicPartition & { from: number; to: number }>,
    apply: (m: ReadonlyArray<{ key: string | null; value: Uint8Array | null }>) => Promise<void>,
  ) {
    let n = 0;
    for (const r of ranges) {
      const removed = this.removed.get(partitionId(r));
      const slice = this.partition(r)
        .slice(r.from, r.to)
        .filter((_, i) => !removed?.has(r.from + i));
      for (let at = 0; at < slice.length; at += this.pollSize) await apply(slice.slice(at, at + this.pollSize));
      n += slice.length;
    }
    return n;
  }

  /**
   * Cleans the partition up to `before` as Kafka's log cleaner may: a record goes if a later record
   * has its key (anywhere in the partition); with `tombstones`, a tombstone goes too once cleaned
   * (past `delete.retention.ms`).
   */
  compact(tp: TopicPartition, before: number, tombstones: boolean): void {
    const records = this.partition(tp);
    const id = partitionId(tp);
    const removed = this.removed.get(id) ?? new Set<number>();
    this.removed.set(id, removed);
    const lastOf = new Map<string | null, number>();
    records.forEach((r, i) => lastOf.set(r.key, i));
    for (let i = 0; i < Math.min(before, records.length); i++) {
      const r = records[i]!;
      if (lastOf.get(r.key) !== i || (tombstones && r.value === null)) removed.add(i);
    }
  }

  async close() {}
}
