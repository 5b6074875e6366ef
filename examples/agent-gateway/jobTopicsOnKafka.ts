import rdkafka, { type LibrdKafkaError } from '@confluentinc/kafka-javascript';
import type { Logger } from 'pino';
import { AckedProducer } from '../../src/kafka/log/ackedProducer.js';
import type { KafkaSettings } from '../../src/kafka/kafkaConfig.js';
import { describePartitions, TopicReader } from '../../src/kafka/log/topicReader.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LogRecord, OutRecord } from '../../src/index.js';
import type { jobTopics } from './jobRequest.js';

const TOPIC_ALREADY_EXISTS = 36;

type Topics = ReturnType<typeof jobTopics>;

/** Creates the job topics that are missing, each with `partitions` partitions (the worker's outputs get the request topic's count anyway). */
export async function createJobTopics(bootstrap: string, topics: Topics, partitions: number): Promise<void> {
  const admin = rdkafka.AdminClient.create({ 'bootstrap.servers': bootstrap, 'client.id': 'agent-gateway-admin', 'log.connection.close': false });
  try {
    for (const topic of [topics.requests, topics.status, topics.responses]) {
      await new Promise<void>((resolve, reject) =>
        admin.createTopic({ topic, num_partitions: partitions, replication_factor: -1 }, 30_000, (error: LibrdKafkaError | undefined) =>
          !error || error.code === TOPIC_ALREADY_EXISTS ? resolve() : reject(new Error(`could not create topic '${topic}' on ${bootstrap}: ${error.message}`)),
        ),
      );
    }
  } finally {
    admin.disconnect();
  }
  // A topic just created is not in every broker's metadata at once: wait until it can be read.
  const deadline = Date.now() + 30_000;
  for (const topic of [topics.requests, topics.status, topics.responses]) {
    while ((await describePartitions({ bootstrap }, topic)) === undefined) {
      if (Date.now() > deadline) throw new Error(`topic '${topic}' was created on ${bootstrap} but is not visible after 30 s`);
      await sleep(200);
    }
  }
}

/**
 * The gateway's side of Kafka: a producer for requests (acknowledged by all in-sync replicas) and
 * readers of the three topics from their start, read_committed, with no consumer group.
 */
export class JobFeed {
  private running = true;
  private readonly loops: Promise<void>[] = [];

  private constructor(
    private readonly producer: AckedProducer,
    private readonly readers: readonly TopicReader[],
  ) {}

  /**
   * Connects, reads each topic to its end (so the table holds every job before the gateway
   * answers), then goes on reading in the background.
   */
  static async open(
    bootstrap: string,
    topics: Topics,
    logger: Logger,
    sinks: Record<keyof Topics, (records: readonly LogRecord[]) => void>,
    onFatal: (error: Error) => void,
  ): Promise<JobFeed> {
    const settings: KafkaSettings = { bootstrap, group: 'agent-gateway', clientId: 'agent-gateway' };
    const producer = await AckedProducer.connect(settings, logger, onFatal);
    const names = Object.keys(sinks) as Array<keyof Topics>;
    const readers = await Promise.all(names.map((name) => TopicReader.open({ settings, topic: topics[name], role: `gateway-${name}` })));
    const feed = new JobFeed(producer, readers);
    // Statuses before responses, so a job that ended before the restart is complete at once.
    for (const [i, reader] of readers.entries()) await reader.catchUp(60_000, sinks[names[i]!]);
    for (const [i, reader] of readers.entries()) feed.loops.push(feed.follow(reader, sinks[names[i]!], onFatal));
    return feed;
  }

  /** Settles once the broker acknowledged the records. */
  produce(records: readonly OutRecord[]): Promise<void> {
    return this.producer.produce(records);
  }

  async close(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    await Promise.all(this.readers.map((r) => r.close()));
    await this.producer.close(5_000);
  }

  private async follow(reader: TopicReader, sink: (records: readonly LogRecord[]) => void, onFatal: (error: Error) => void): Promise<void> {
    while (this.running) {
      try {
        sink(await reader.poll(100));
      } catch (error) {
        this.running = false;
        onFatal(error as Error);
      }
    }
  }
}
