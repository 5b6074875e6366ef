import type { LogRecord, OutRecord, TopicPartition } from '../src/ports/log.js';
import { partitionId } from '../src/ports/log.js';
import { partitionForKey } from './murmur2.js';

/**
 * The driver's log: topics of partitions held in memory, and one consumer group's committed
 * offsets. It outlives engine instances, as a Kafka cluster outlives a crashed worker.
 */
export class MemoryLog {
  private readonly topics = new Map<string, LogRecord[][]>();
  private readonly committedOffsets = new Map<string, number>();
  // Every record of a topic in the order it was appended, across partitions.
  private readonly appendOrder = new Map<string, LogRecord[]>();

  constructor(private readonly defaultPartitions: number) {}

  partitions(topic: string): LogRecord[][] {
    let partitions = this.topics.get(topic);
    if (!partitions) {
      partitions = Array.from({ length: this.defaultPartitions }, () => []);
      this.topics.set(topic, partitions);
    }
    return partitions;
  }

  topicNames(): string[] {
    return [...this.topics.keys()];
  }

  append(record: OutRecord, timestampMs: number): LogRecord {
    const partitions = this.partitions(record.topic);
    const partition = record.partition ?? (record.key === null ? 0 : partitionForKey(record.key, partitions.length));
    const log = partitions[partition];
    if (!log) throw new RangeError(`topic '${record.topic}' has ${partitions.length} partitions; there is no partition ${partition}`);
    const appended: LogRecord = {
      topic: record.topic,
      partition,
      offset: log.length,
      key: record.key,
      value: record.value,
      timestampMs,
      headers: record.headers ?? {},
    };
    log.push(appended);
    let all = this.appendOrder.get(record.topic);
    if (!all) this.appendOrder.set(record.topic, (all = []));
    all.push(appended);
    return appended;
  }

  /** Records of `topic` in append order, from the `from`-th on. */
  appended(topic: string, from = 0): LogRecord[] {
    return (this.appendOrder.get(topic) ?? []).slice(from);
  }

  endOffset(tp: TopicPartition): number {
    return this.partitions(tp.topic)[tp.partition]?.length ?? 0;
  }

  read(tp: TopicPartition, fromOffset: number, max: number): LogRecord[] {
    return (this.partitions(tp.topic)[tp.partition] ?? []).slice(fromOffset, fromOffset + max);
  }

  commit(tp: TopicPartition, offset: number): void {
    const id = partitionId(tp);
    const before = this.committedOffsets.get(id) ?? 0;
    if (offset > this.endOffset(tp)) throw new Error(`commit of ${id} at ${offset}, past its end ${this.endOffset(tp)}: no such offset was ever polled`);
    this.committedOffsets.set(id, Math.max(before, offset));
  }

  committed(tp: TopicPartition): number {
    return this.committedOffsets.get(partitionId(tp)) ?? 0;
  }
}
