import rdkafka, { type LibrdKafkaError, type Message } from '@confluentinc/kafka-javascript';
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { partitionId, type TopicPartition } from '../../ports/log.js';
import type { KafkaSettings } from '../kafkaConfig.js';
import { logClientTo } from '../log/kafkaLogger.js';
import { fromKafkaHeaders } from '../log/records.js';

/**
 * librdkafka's answers that pass: a topic just created and not yet in the client's metadata, a
 * broker down or a partition leader moving (another replica takes over within seconds).
 */
const TRANSIENT: ReadonlySet<number> = new Set([
  -190, // _UNKNOWN_PARTITION
  -188, // _UNKNOWN_TOPIC
  -195, // _TRANSPORT
  -187, // _ALL_BROKERS_DOWN
  -185, // _TIMED_OUT
  -137, // _DESTROY_BROKER: the connection to a broker that went away
  3, // UNKNOWN_TOPIC_OR_PART
  5, // LEADER_NOT_AVAILABLE
  6, // NOT_LEADER_FOR_PARTITION
  7, // REQUEST_TIMED_OUT
]);

function isTransient(error: unknown): boolean {
  const e = error as Partial<LibrdKafkaError>;
  return e.isRetriable === true || (typeof e.code === 'number' && TRANSIENT.has(e.code));
}

/** One changelog partition to read, from `from` up to (not including) `to`. */
export interface ChangelogRange extends TopicPartition {
  readonly from: number;
  readonly to: number;
}

/** The readable range of a changelog partition: `low` its first offset, `end` where a read of it ends. */
export interface ChangelogEnds {
  readonly low: number;
  readonly end: number;
}

/** A changelog record as a restore applies it. */
export interface ChangelogMessage {
  /** Where it was read (ChangelogReader sets both; a record that cannot be applied is named by them). */
  readonly partition?: number;
  readonly offset?: number;
  readonly key: string | null;
  readonly value: Uint8Array | null;
  /** Its headers; the format version's among them (none on records of format 1). */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * Reads changelog partitions to their end with a consumer of its own that joins no group: it is
 * assigned the partitions it reads and commits nothing. With `read_committed` (the default, as the
 * worker's consumer), a read ends at the last stable offset: never in an open transaction, never
 * an aborted record.
 */
export class ChangelogReader {
  private constructor(
    private readonly consumer: rdkafka.KafkaConsumer,
    private readonly logger: Logger,
    private readonly timeoutMs: number,
  ) {}

  static async connect(settings: KafkaSettings, logger: Logger, timeoutMs = 60_000): Promise<ChangelogReader> {
    const consumer = new rdkafka.KafkaConsumer(readerConfig(settings), { 'auto.offset.reset': 'earliest' });
    logClientTo(consumer, logger, (error) => logger.error({ err: error }, 'changelog reader failed'));
    await new Promise<void>((resolve, reject) =>
      consumer.connect({ timeout: timeoutMs }, (error) =>
        error ? reject(new Error(`changelog reader could not connect to ${settings.bootstrap}: ${error.message}`)) : resolve(),
      ),
    );
    consumer.setDefaultConsumeTimeout(200);
    return new ChangelogReader(consumer, logger, timeoutMs);
  }

  /**
   * Where the partition begins and where a read of it ends now. A changelog created a moment ago
   * may not be in this client's metadata yet, and a broker may be down while its partitions move
   * to other replicas: those are waited out, within the reader's timeout.
   */
  async ends(tp: TopicPartition): Promise<ChangelogEnds> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      try {
        return await this.watermarks(tp);
      } catch (error) {
        const code = (error as LibrdKafkaError).code;
        if (!isTransient(error) || Date.now() >= deadline) {
          throw new Error(`changelog ${partitionId(tp)}: could not read its offsets: ${(error as Error).message} (code ${code})`, { cause: error });
        }
        // The client keeps no fresh metadata of a topic it neither subscribes to nor is
        // assigned: ask for it, so that a partition's new leader is found.
        await this.refreshMetadata(tp.topic);
        await sleep(200);
      }
    }
  }

  private refreshMetadata(topic: string): Promise<void> {
    return new Promise((resolve) => this.consumer.getMetadata({ topic, timeout: 5_000 }, () => resolve()));
  }

  private watermarks(tp: TopicPartition): Promise<ChangelogEnds> {
    return new Promise((resolve, reject) =>
      // A short timeout per call: a call sent to a leader that just died waits all of it, and the
      // next call, with fresh metadata, finds the new leader.
      this.consumer.queryWatermarkOffsets(tp.topic, tp.partition, Math.min(5_000, this.timeoutMs), (error, offsets) =>
        error ? reject(error) : resolve({ low: offsets.lowOffset, end: offsets.highOffset }),
      ),
    );
  }

  /**
   * Reads every range to its `to` and hands each polled batch to `apply`, in offset order per
   * partition. Returns the number of records read.
   */
  async read(ranges: readonly ChangelogRange[], apply: (messages: readonly ChangelogMessage[]) => Promise<void>): Promise<number> {
    const pending = new Map(ranges.filter((r) => r.from < r.to).map((r) => [partitionId(r), r]));
    if (pending.size === 0) return 0;
    // A transaction's commit marker takes the last offset(s) and is never delivered: the end of
    // the partition (partition.eof at or past `to`) says the read is complete then. The client
    // emits a batch's eof events before it hands over the batch: they are noted, and applied
    // once the batch's records are.
    const ended = new Set<string>();
    const onEof = (eof: { topic: string; partition: number; offset: number }): void => {
      const range = pending.get(partitionId(eof));
      if (range && eof.offset >= range.to) ended.add(partitionId(eof));
    };
    this.consumer.on('partition.eof', onEof);
    this.consumer.assign([...pending.values()].map(({ topic, partition, from }) => ({ topic, partition, offset: from })));
    let read = 0;
    let lastProgress = Date.now();
    try {
      while (pending.size > 0) {
        const batch = await this.poll();
        const wanted: ChangelogMessage[] = [];
        for (const message of batch) {
          const range = pending.get(partitionId(message));
          if (!range || message.offset >= range.to) continue;
          wanted.push({
            partition: message.partition,
            offset: message.offset,
            key: message.key === null || message.key === undefined ? null : message.key.toString(),
            value: message.value ?? null,
            headers: fromKafkaHeaders(message.headers),
          });
          if (message.offset + 1 >= range.to) pending.delete(partitionId(message));
        }
        for (const id of ended) pending.delete(id);
        ended.clear();
        if (wanted.length > 0) {
          await apply(wanted);
          read += wanted.length;
          lastProgress = Date.now();
        } else if (Date.now() - lastProgress > this.timeoutMs) {
          const where = [...pending.values()].map((r) => `${partitionId(r)} (to offset ${r.to})`).join(', ');
          throw new Error(`changelog restore made no progress for ${this.timeoutMs} ms on ${where}: check that the brokers of these partitions are up`);
        }
      }
    } finally {
      this.consumer.removeListener('partition.eof', onEof);
      this.consumer.unassign();
    }
    this.logger.debug({ ranges: ranges.map((r) => `${partitionId(r)}@${r.from}..${r.to}`), read }, 'read changelog');
    return read;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.consumer.disconnect(() => resolve()));
  }

  /** One poll; a transient error (a broker down) is a poll that found nothing, and counts against the no-progress timeout. */
  private poll(): Promise<Message[]> {
    return new Promise((resolve, reject) =>
      this.consumer.consume(1_000, (error: LibrdKafkaError, messages: Message[]) => {
        if (!error) resolve(messages);
        else if (isTransient(error)) {
          this.logger.debug({ code: error.code }, `changelog read: ${error.message}; retrying`);
          setTimeout(() => resolve([]), 200);
        } else reject(new Error(`changelog read: ${error.message} (code ${error.code})`));
      }),
    );
  }
}

/** A consumer that is assigned its partitions and never commits: no group is joined. */
function readerConfig(settings: KafkaSettings): rdkafka.ConsumerGlobalConfig {
  return {
    'bootstrap.servers': settings.bootstrap,
    'client.id': `${settings.clientId ?? 'orderly'}-changelog-reader`,
    'log.connection.close': false,
    // librdkafka wants a group id; assign() never joins it and nothing is committed to it.
    'group.id': `${settings.group}-changelog-reader`,
    'enable.auto.commit': false,
    'enable.auto.offset.store': false,
    'isolation.level': settings.isolationLevel ?? 'read_committed',
    'enable.partition.eof': true,
    'allow.auto.create.topics': false,
    ...settings.librdkafka,
  } as rdkafka.ConsumerGlobalConfig;
}
