import rdkafka, { type DeliveryReport, type KafkaConsumer, type LibrdKafkaError } from '@confluentinc/kafka-javascript';
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CommitOffset, OutRecord } from '../ports/log.js';
import { producerConfig, type KafkaSettings, type TransactionSettings } from './kafkaConfig.js';
import { logClientTo } from './kafkaLogger.js';
import { toProduceArgs } from './records.js';

const QUEUE_FULL = -184;

/** The records of one `produce` call still unacknowledged: one object per call, the opaque of each of its records. */
interface Pending {
  /** Records left to acknowledge; -1 once the call has failed. */
  left: number;
  resolve(): void;
  reject(error: Error): void;
}

type ProduceArgs = ReturnType<typeof toProduceArgs>;

/**
 * An idempotent producer whose `produce` settles once every record is acknowledged by all
 * in-sync replicas (or failed for good: librdkafka retries until `message.timeout.ms`). Given
 * transaction settings, it is transactional: {@link Transactions} then drives its transactions.
 */
export class AckedProducer {
  /** Records that did not fit in librdkafka's full queue, in order; every later record waits behind them. */
  private readonly waiting: Array<{ readonly args: ProduceArgs; readonly pending: Pending }> = [];

  private constructor(
    private readonly producer: rdkafka.Producer,
    private readonly logger: Logger,
  ) {}

  static async connect(settings: KafkaSettings, logger: Logger, onFatal: (error: Error) => void, transactions?: TransactionSettings): Promise<AckedProducer> {
    const producer = new rdkafka.Producer(producerConfig(settings, transactions));
    logClientTo(producer, logger, onFatal);
    producer.on('delivery-report', (error: LibrdKafkaError | null, report: DeliveryReport) => {
      const pending = report.opaque as Pending | undefined;
      if (!pending || pending.left < 0) return;
      if (error) {
        pending.left = -1;
        pending.reject(new Error(`Kafka did not acknowledge a record for ${report.topic}: ${error.message} (code ${error.code})`));
      } else if ((pending.left -= 1) === 0) pending.resolve();
    });
    await new Promise<void>((resolve, reject) => {
      producer.connect({}, (error) => (error ? reject(new Error(`Kafka producer could not connect to ${settings.bootstrap}: ${error.message}`)) : resolve()));
    });
    producer.setPollInBackground(true);
    const acked = new AckedProducer(producer, logger);
    if (transactions) {
      // Fences a previous incarnation with the same transactional id and aborts its open transaction.
      await acked.call(`initTransactions (transactional.id ${transactions.transactionalId})`, (cb) => producer.initTransactions(transactions.timeoutMs, cb));
    }
    return acked;
  }

  beginTransaction(): Promise<void> {
    return this.call('beginTransaction', (cb) => this.producer.beginTransaction(cb));
  }

  /** Adds the consumer's offsets (with its group metadata, so a fenced member cannot commit) to the open transaction. */
  sendOffsetsToTransaction(offsets: readonly CommitOffset[], consumer: KafkaConsumer, timeoutMs: number): Promise<void> {
    const tpos = offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset }));
    return this.call('sendOffsetsToTransaction', (cb) => this.producer.sendOffsetsToTransaction(tpos, consumer, timeoutMs, cb));
  }

  commitTransaction(timeoutMs: number): Promise<void> {
    return this.call('commitTransaction', (cb) => this.producer.commitTransaction(timeoutMs, cb));
  }

  abortTransaction(timeoutMs: number): Promise<void> {
    return this.call('abortTransaction', (cb) => this.producer.abortTransaction(timeoutMs, cb));
  }

  private call(what: string, run: (cb: (error: LibrdKafkaError) => void) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      try {
        run((error) => (error ? reject(new TransactionError(what, error)) : resolve()));
      } catch (error) {
        reject(new TransactionError(what, error as LibrdKafkaError));
      }
    });
  }

  /**
   * Appends the records; settles once all are acknowledged, or rejects with the first failure.
   * Records are handed to librdkafka in call order, across calls too: while its queue is full,
   * later records wait behind the ones that did not fit.
   */
  produce(records: readonly OutRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const pending: Pending = { left: records.length, resolve, reject };
      try {
        for (const record of records) this.send(toProduceArgs(record), pending);
      } catch (error) {
        pending.left = -1;
        reject(error as Error);
      }
    });
  }

  private send(args: ProduceArgs, pending: Pending): void {
    if (this.waiting.length === 0 && this.tryProduce(args, pending)) return;
    this.waiting.push({ args, pending });
    if (this.waiting.length === 1) {
      // The local queue is full: wait for acknowledgements to make room.
      this.logger.debug({ topic: args.topic }, 'producer queue full; waiting');
      void this.drainWaiting();
    }
  }

  /** Produces one record; false if librdkafka's queue is full. */
  private tryProduce({ topic, partition, value, key, headers }: ProduceArgs, pending: Pending): boolean {
    try {
      this.producer.produce(topic, partition, value, key, null, pending, headers);
      return true;
    } catch (error) {
      if ((error as { code?: number }).code !== QUEUE_FULL) throw error;
      return false;
    }
  }

  /** Hands the records that did not fit to librdkafka, in order, as room is made. */
  private async drainWaiting(): Promise<void> {
    while (this.waiting.length > 0) {
      await sleep(20);
      while (this.waiting.length > 0) {
        const { args, pending } = this.waiting[0]!;
        try {
          if (!this.tryProduce(args, pending)) break;
        } catch (error) {
          if (pending.left >= 0) {
            pending.left = -1;
            pending.reject(error as Error);
          }
        }
        this.waiting.shift();
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

/** A transactional call that failed, with what librdkafka says may be done about it. */
export class TransactionError extends Error {
  readonly code: number;
  /** The same call may be made again. */
  readonly retriable: boolean;
  /** The transaction must be aborted; its records and offsets are lost. */
  readonly requiresAbort: boolean;
  /** The producer can do nothing more (fenced by a newer instance with its transactional id). */
  readonly fatal: boolean;

  constructor(what: string, cause: LibrdKafkaError & { isTxnRequiresAbort?: boolean }) {
    super(`Kafka ${what} failed: ${cause?.message ?? String(cause)} (code ${cause?.code})`, { cause });
    this.name = 'TransactionError';
    this.code = cause?.code ?? -1;
    this.retriable = cause?.isRetriable === true;
    this.requiresAbort = cause?.isTxnRequiresAbort === true;
    this.fatal = cause?.isFatal === true;
  }
}
