import type { CommitOffset, LogRecord, OutRecord, TopicPartition } from '../src/ports/log.js';
import { partitionId } from '../src/ports/log.js';
import { partitionForKey } from './murmur2.js';
import { OFFSET_METADATA_MAX_BYTES } from '../src/engine/offsetMetadata.js';

/**
 * The driver's log: topics of partitions held in memory, and one consumer group's committed
 * offsets. It outlives engine instances, as a Kafka cluster outlives a crashed worker.
 */
export class MemoryLog {
  private readonly topics = new Map<string, LogRecord[][]>();
  private readonly committedOffsets = new Map<string, { readonly offset: number; readonly metadata?: string }>();
  // Every record of a topic in the order it was appended, across partitions.
  private readonly appendOrder = new Map<string, LogRecord[]>();

  constructor(
    private readonly defaultPartitions: number,
    /** A broker's `offset.metadata.max.bytes`. */
    private readonly metadataMaxBytes: number = OFFSET_METADATA_MAX_BYTES,
  ) {}

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

  /**
   * Commits `offset` with its metadata, which replaces the metadata committed before; a commit
   * behind the committed offset changes nothing. Metadata longer than `metadataMaxBytes` (with the
   * NUL byte the Kafka client adds) is refused, as a broker refuses it past `offset.metadata.max.bytes`.
   */
  commit(tp: TopicPartition, offset: number, metadata?: string): void {
    const id = partitionId(tp);
    const before = this.committedOffsets.get(id)?.offset ?? 0;
    if (offset > this.endOffset(tp)) throw new Error(`commit of ${id} at ${offset}, past its end ${this.endOffset(tp)}: no such offset was ever polled`);
    // Kafka's client sends the metadata with a NUL byte after it, which the broker counts.
    if (metadata !== undefined && metadata.length + 1 > this.metadataMaxBytes)
      throw new Error(
        `commit of ${id} at ${offset}: its metadata is ${metadata.length} bytes and a NUL, past the log's offset.metadata.max.bytes ${this.metadataMaxBytes} (OFFSET_METADATA_TOO_LARGE)`,
      );
    if (offset >= before) this.committedOffsets.set(id, metadata ? { offset, metadata } : { offset });
  }

  /** The committed offset (0 when none) and its metadata. */
  committedWithMetadata(tp: TopicPartition): CommitOffset {
    const committed = this.committedOffsets.get(partitionId(tp));
    return { topic: tp.topic, partition: tp.partition, offset: committed?.offset ?? 0, ...(committed?.metadata ? { metadata: committed.metadata } : {}) };
  }

  committed(tp: TopicPartition): number {
    return this.committedOffsets.get(partitionId(tp))?.offset ?? 0;
  }
}
