import rdkafka, { type DeliveryReport, type LibrdKafkaError } from '@confluentinc/kafka-javascript';
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import type { OutRecord } from '../ports/log.js';
import { producerConfig, type KafkaSettings } from './kafkaConfig.js';
import { logClientTo } from './kafkaLogger.js';
import { toProduceArgs } from './records.js';

const QUEUE_FULL = -184;

interface Pending {
  resolve(): void;
  reject(error: Error): void;
}

/**
 * An idempotent producer whose `produce` settles once every record is acknowledged by all
 * in-sync replicas (or failed for good: librdkafka retries until `message.timeout.ms`).
 */
export class AckedProducer {
  private constructor(
    private readonly producer: rdkafka.Producer,
    private readonly logger: Logger,
  ) {}

  static async connect(settings: KafkaSettings, logger: Logger, onFatal: (error: Error) => void): Promise<AckedProducer> {
    const producer = new rdkafka.Producer(producerConfig(settings));
    logClientTo(producer, logger, onFatal);
    producer.on('delivery-report', (error: LibrdKafkaError | null, report: DeliveryReport) => {
      const pending = report.opaque as Pending | undefined;
      if (!pending) return;
      if (error) pending.reject(new Error(`Kafka did not acknowledge a record for ${report.topic}: ${error.message} (code ${error.code})`));
      else pending.resolve();
    });
    await new Promise<void>((resolve, reject) => {
      producer.connect({}, (error) => (error ? reject(new Error(`Kafka producer could not connect to ${settings.bootstrap}: ${error.message}`)) : resolve()));
    });
    producer.setPollInBackground(true);
    return new AckedProducer(producer, logger);
  }

  /** Appends the records; settles once all are acknowledged, or rejects with the first failure. */
  async produce(records: readonly OutRecord[]): Promise<void> {
    await Promise.all(records.map((record) => this.produceOne(record)));
  }

  private async produceOne(record: OutRecord): Promise<void> {
    const { topic, partition, value, key, headers } = toProduceArgs(record);
    for (;;) {
      const pending = {} as Pending;
      const acked = new Promise<void>((resolve, reject) => Object.assign(pending, { resolve, reject }));
      try {
        this.producer.produce(topic, partition, value, key, null, pending, headers);
        return await acked;
      } catch (error) {
        if ((error as { code?: number }).code !== QUEUE_FULL) throw error;
        // The local queue is full: wait for acknowledgements to make room.
        this.logger.debug({ topic }, 'producer queue full; waiting');
        await sleep(20);
      }
    }
  }

  /** Waits for every record in flight, then disconnects. */
  async close(timeoutMs = 30_000): Promise<void> {
    await new Promise<void>((resolve) => {
      this.producer.flush(timeoutMs, (error) => {
        if (error) this.logger.warn({ code: error.code }, `producer flush on close: ${error.message}`);
        resolve();
      });
    });
    await new Promise<void>((resolve) => this.producer.disconnect(() => resolve()));
  }
}
