import rdkafka, { type ConsumerGlobalConfig, type EofEvent, type Message } from '@confluentinc/kafka-javascript';
import type { LogRecord } from '../../ports/log.js';
import type { KafkaSettings } from '../kafkaConfig.js';
import { toLogRecord } from './records.js';

const UNKNOWN_TOPIC = 3;

/** Where and as whom a reader connects: a worker's settings, or the CLI's `--bootstrap` and `-X`. */
export type ReaderSettings = Pick<KafkaSettings, 'bootstrap' | 'clientId' | 'librdkafka'>;

export interface TopicReaderOptions {
  readonly settings: ReaderSettings;
  readonly topic: string;
  /** The partitions to read. @defaultValue every partition of the topic */
  readonly partitions?: readonly number[];
  /** Names the reader in the broker's logs. */
  readonly role: string;
}

/**
 * Reads whole partitions of a topic with no consumer group (nothing joins, nothing is committed):
 * for changelogs and the resolutions topic, which every reader reads from the start. It knows
 * when it has caught up: every partition it reads has reported its end since its last record.
 */
export class TopicReader {
  private readonly behind: Set<number>;

  private constructor(
    private readonly consumer: rdkafka.KafkaConsumer,
    readonly topic: string,
    readonly partitions: readonly number[],
  ) {
    this.behind = new Set(partitions);
    // The binding emits both in log order, synchronously inside each consume call.
    consumer.on('data', (message: Message) => this.behind.add(message.partition));
    consumer.on('partition.eof', (eof: EofEvent) => this.behind.delete(eof.partition));
  }

  static async open(options: TopicReaderOptions): Promise<TopicReader> {
    const { settings, topic } = options;
    const partitions = options.partitions ?? allPartitions(await partitionCount(settings, topic));
    const config = {
      'bootstrap.servers': settings.bootstrap,
      'client.id': `${settings.clientId ?? 'orderly'}-${options.role}`,
      // Required by the client, never used: the reader assigns partitions itself and commits nothing.
      'group.id': `orderly-${options.role}-reader`,
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'enable.partition.eof': true,
      'isolation.level': 'read_committed',
      'allow.auto.create.topics': false,
      'log.connection.close': false,
      ...settings.librdkafka,
    } as ConsumerGlobalConfig;
    const consumer = new rdkafka.KafkaConsumer(config, undefined);
    await new Promise<void>((resolve, reject) =>
      consumer.connect({}, (error) => (error ? reject(new Error(`could not connect to ${settings.bootstrap} to read ${topic}: ${error.message}`)) : resolve())),
    );
    try {
      consumer.assign(partitions.map((partition) => ({ topic, partition, offset: 0 })));
    } catch (error) {
      await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
      throw new Error(`could not read ${topic}: ${(error as Error).message}`, { cause: error });
    }
    return new TopicReader(consumer, topic, partitions);
  }

  /** True when every partition has reported its end since the last record read from it. */
  get caughtUp(): boolean {
    return this.behind.size === 0;
  }

  /** The records available now, up to `max`, waiting at most `timeoutMs` for the first. */
  async poll(timeoutMs: number, max = 500): Promise<LogRecord[]> {
    this.consumer.setDefaultConsumeTimeout(timeoutMs);
    const messages = await new Promise<Message[]>((resolve, reject) =>
      this.consumer.consume(max, (error, batch) => (error ? reject(new Error(`reading ${this.topic}: ${error.message}`)) : resolve(batch))),
    );
    return messages.map(toLogRecord);
  }

  /** Reads until caught up; throws after `timeoutMs`. */
  async catchUp(timeoutMs: number, onRecords: (records: readonly LogRecord[]) => void): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.caughtUp) {
      if (Date.now() > deadline)
        throw new Error(`reading ${this.topic}: not at its end after ${timeoutMs} ms (partitions behind: ${[...this.behind].join(', ')})`);
      onRecords(await this.poll(100));
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.consumer.disconnect(() => resolve()));
  }
}

/** The partition count of a topic; throws, naming the topic, when it does not exist. */
export async function partitionCount(settings: ReaderSettings, topic: string): Promise<number> {
  const found = await describePartitions(settings, topic);
  if (found === undefined) throw new MissingTopicError(topic, settings.bootstrap);
  return found;
}

/** A topic to read is not on the cluster. */
export class MissingTopicError extends Error {
  constructor(
    readonly topic: string,
    bootstrap: string,
  ) {
    super(`topic '${topic}' does not exist on ${bootstrap}`);
    this.name = 'MissingTopicError';
  }
}

/** The partition count of a topic, or undefined when it does not exist. */
export async function describePartitions(settings: ReaderSettings, topic: string, timeoutMs = 30_000): Promise<number | undefined> {
  const admin = rdkafka.AdminClient.create({
    'bootstrap.servers': settings.bootstrap,
    'client.id': `${settings.clientId ?? 'orderly'}-admin`,
    'log.connection.close': false,
    ...settings.librdkafka,
  } as never);
  try {
    return await new Promise<number | undefined>((resolve, reject) =>
      admin.describeTopics([topic], { timeout: timeoutMs }, (error, result) => {
        if (error) return reject(new Error(`could not describe topic '${topic}' on ${settings.bootstrap}: ${error.message}`));
        const described = result[0];
        if (!described?.error) return resolve(described?.partitions.length ?? 0);
        if (described.error.code === UNKNOWN_TOPIC) return resolve(undefined);
        reject(new Error(`topic '${topic}': ${described.error.message} (code ${described.error.code})`));
      }),
    );
  } finally {
    admin.disconnect();
  }
}

/** Partitions 0 to count - 1. */
export function allPartitions(count: number): number[] {
  return Array.from({ length: count }, (_, i) => i);
}
