import rdkafka, { type DeliveryReport, type KafkaConsumer, type LibrdKafkaError } from '@confluentinc/kafka-javascript';
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CommitOffset, OutRecord } from '../../ports/log.js';
import { producerConfig, type KafkaSettings, type TransactionSettings } from '../kafkaConfig.js';
import { logClientTo } from './kafkaLogger.js';
import { toProduceArgs } from './records.js';

const QUEUE_FULL = -184;

/**
 * The records of one `produce` call still unacknowledged: one object per call, the opaque of the
 * records it waits for (see {@link AckedProducer.produce}).
 */
interface Pending {
  /** Acknowledgements left to wait for; -1 once the call has settled. */
  left: number;
  resolve(): void;
  reject(error: Error): void;
}

type ProduceArgs = ReturnType<typeof toProduceArgs>;

/**
 * An idempotent producer whose `produce` settles once every record is acknowledged by all
 * in-sync replicas, or failed for good (refused by the broker; without transactions that failure
 * is fatal and fails every record behind it, see `producerConfig`). Given transaction settings, it
 * is transactional: {@link Transactions} then drives its transactions.
 */
export class AckedProducer {
  /** Records that did not fit in librdkafka's full queue, in order; every later record waits behind them. */
  private readonly waiting: Array<{ readonly args: ProduceArgs; readonly pending: Pending; readonly vouches: boolean }> = [];
  /** Without transactions: the calls not settled yet, failed together when a record fails for good. */
  private readonly unsettled = new Set<Pending>();
  /** Without transactions: the failure that stopped this producer. */
  private failure: Error | undefined;

  private constructor(
    private readonly producer: rdkafka.Producer,
    private readonly logger: Logger,
    private readonly onFatal: (error: Error) => void,
    private readonly transactional: boolean,
  ) {}

  static async connect(settings: KafkaSettings, logger: Logger, onFatal: (error: Error) => void, transactions?: TransactionSettings): Promise<AckedProducer> {
    const producer = new rdkafka.Producer(producerConfig(settings, transactions));
    logClientTo(producer, logger, onFatal);
    const acked = new AckedProducer(producer, logger, onFatal, transactions !== undefined);
    producer.on('delivery-report', (error: LibrdKafkaError | null, report: DeliveryReport) => acked.delivered(error, report));
    await new Promise<void>((resolve, reject) => {
      producer.connect({}, (error) => (error ? reject(new Error(`Kafka producer could not connect to ${settings.bootstrap}: ${error.message}`)) : resolve()));
    });
    producer.setPollInBackground(true);
    if (transactions) {
      // Fences a previous incarnation with the same transactional id and aborts its open transaction.
      await acked.call(`initTransactions (transactional.id ${transactions.transactionalId})`, (cb) => producer.initTransactions(transactions.timeoutMs, cb));
    }
    return acked;
  }

  private delivered(error: LibrdKafkaError | null, report: DeliveryReport): void {
    const pending = report.opaque as Pending | undefined;
    if (!error) {
      if (pending && pending.left > 0 && (pending.left -= 1) === 0) this.settle(pending);
      return;
    }
    // A record without an opaque failed too: the one its call waits for, later in its partition, fails behind it.
    const failed = new Error(`Kafka did not acknowledge a record for ${report.topic}: ${error.message} (code ${error.code})${fixFor(error.code)}`);
    if (pending) this.settle(pending, failed);
    if (!this.transactional) this.stop(failed);
  }

  /**
   * Without transactions, a record failed for good ends this producer: librdkafka (gap-less) fails
   * what is queued behind it, and every call not settled yet, or made from now on, fails too, so
   * nothing is written after the gap. The binding does not mark librdkafka's fatal errors as such,
   * so this does not wait for one: the worker hears it here.
   */
  private stop(cause: Error): void {
    if (this.failure) return;
    this.failure = new Error(`Kafka producer stopped: a record failed for good, and nothing may be written after it (${cause.message})`, { cause });
    // Not handed to librdkafka yet: they never will be.
    this.waiting.length = 0;
    for (const pending of [...this.unsettled]) this.settle(pending, this.failure);
    this.logger.error({ err: cause }, 'a record failed for good: the producer stops, so that no later record is written after it');
    this.onFatal(this.failure);
  }

  private settle(pending: Pending, error?: Error): void {
    if (pending.left < 0) return;
    pending.left = -1;
    this.unsettled.delete(pending);
    if (error) pending.reject(error);
    else pending.resolve();
  }

  beginTransaction(): Promise<void> {
    return this.call('beginTransaction', (cb) => this.producer.beginTransaction(cb));
  }

  /** Adds the consumer's offsets (with its group metadata, so a fenced member cannot commit) to the open transaction. */
  sendOffsetsToTransaction(offsets: readonly CommitOffset[], consumer: KafkaConsumer, timeoutMs: number): Promise<void> {
    // The metadata goes in the transaction with its offset (librdkafka's TxnOffsetCommit carries it).
    const tpos = offsets.map(({ topic, partition, offset, metadata }) => (metadata ? { topic, partition, offset, metadata } : { topic, partition, offset }));
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
   *
   * Without transactions only the last record of each partition the call writes carries the call
   * as its opaque (every record of an unknown partition does): the producer is idempotent and
   * gap-less, so a partition's records are written in order and none is skipped, and the last
   * one's acknowledgement vouches for the others; a record that fails stops the producer, which
   * fails every call not settled. An opaque costs librdkafka's binding a persistent handle per
   * record, and a changelog batch writes hundreds of records to a few dozen partitions.
   */
  produce(records: readonly OutRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      // In a transaction every record carries it: a failed record then fails its call at once, not only the commit.
      const vouching = this.transactional || records.length === 1 ? everyRecord(records) : lastOfEachPartition(records);
      const pending: Pending = { left: vouching.count, resolve, reject };
      if (!this.transactional) this.unsettled.add(pending);
      try {
        for (let i = 0; i < records.length; i++) this.send(toProduceArgs(records[i]!), pending, vouching.at[i]!);
      } catch (error) {
        // Refused before it left (larger than message.max.bytes, say): as failed for good.
        const failed = error as Error;
        this.settle(pending, failed);
        if (!this.transactional) this.stop(failed);
      }
    });
  }

  /** Hands one record of the call `pending` to librdkafka, with the call as its opaque if it `vouches` for the call's records of its partition. */
  private send(args: ProduceArgs, pending: Pending, vouches: boolean): void {
    if (this.waiting.length === 0 && this.tryProduce(args, vouches ? pending : undefined)) return;
    this.waiting.push({ args, pending, vouches });
    if (this.waiting.length === 1) {
      // The local queue is full: wait for acknowledgements to make room.
      this.logger.debug({ topic: args.topic }, 'producer queue full; waiting');
      void this.drainWaiting();
    }
  }

  /** Produces one record; false if librdkafka's queue is full. */
  private tryProduce({ topic, partition, value, key, headers }: ProduceArgs, pending: Pending | undefined): boolean {
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
        const { args, pending, vouches } = this.waiting[0]!;
        try {
          if (!this.tryProduce(args, vouches ? pending : undefined)) break;
        } catch (error) {
          this.settle(pending, error as Error);
          if (!this.transactional) this.stop(error as Error);
        }
        this.waiting.shift();
      }
    }
  }

  /** Waits for every record in flight, then disconnects. */
  async close(timeoutMs = 30_000): Promise<void> {
    // Stopped: nothing queued will be written, so there is nothing to wait for.
    if (!this.failure) await this.flush(timeoutMs);
    await new Promise<void>((resolve) => this.producer.disconnect(() => resolve()));
  }

  private async flush(timeoutMs: number): Promise<void> {
    await new Promise<void>((resolve) => {
      this.producer.flush(timeoutMs, (error) => {
        if (error) this.logger.warn({ code: error.code }, `producer flush on close: ${error.message}`);
        resolve();
      });
    });
  }
}

const ONE: { readonly at: boolean[]; readonly count: number } = Object.freeze({ at: Object.freeze([true]) as boolean[], count: 1 });

/** Every record carries its call (a transaction's; a call of one record, such as an event's output). */
function everyRecord(records: readonly OutRecord[]): { readonly at: boolean[]; readonly count: number } {
  if (records.length === 1) return ONE;
  return { at: new Array<boolean>(records.length).fill(true), count: records.length };
}

/**
 * Which records of a call carry it as their opaque: the last one of each topic partition, and every
 * one whose partition the partitioner picks (-1 or none: which records share it is not known here).
 */
function lastOfEachPartition(records: readonly OutRecord[]): { readonly at: boolean[]; readonly count: number } {
  const at = new Array<boolean>(records.length).fill(false);
  let count = 0;
  // Few topics and partitions per call: a topic's partitions seen so far, from the end.
  const seen = new Map<string, Set<number>>();
  for (let i = records.length - 1; i >= 0; i--) {
    const { topic, partition } = records[i]!;
    if (partition === undefined || partition < 0) {
      at[i] = true;
      count += 1;
      continue;
    }
    let partitions = seen.get(topic);
    if (!partitions) seen.set(topic, (partitions = new Set()));
    if (partitions.has(partition)) continue;
    partitions.add(partition);
    at[i] = true;
    count += 1;
  }
  return { at, count };
}

/** Broker answers that refuse a record for its size: the same record is refused again until a limit is raised. */
const TOO_LARGE: ReadonlySet<number> = new Set([
  10, // MSG_SIZE_TOO_LARGE
  18, // RECORD_LIST_TOO_LARGE
]);

function fixFor(code: number): string {
  if (!TOO_LARGE.has(code)) return '';
  return "; the record is larger than the topic's max.message.bytes allows: raise that topic setting (and the producer's message.max.bytes if needed), or keep smaller values in the state and outputs";
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
