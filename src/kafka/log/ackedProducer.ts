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
  /** Without transactions: calls handed to librdkafka since the last flush began, acknowledged by the next one. */
  private handedOver: Pending[] = [];
  /** Without transactions: calls made while a flush runs, handed over when it ends (a flush waits for every record queued, later ones too). */
  private readonly held: Array<{ readonly records: readonly OutRecord[]; readonly pending: Pending }> = [];
  /** Without transactions: a flush is under way. */
  private flushing = false;
  private flushScheduled = false;

  private constructor(
    private readonly producer: rdkafka.Producer,
    private readonly logger: Logger,
    private readonly onFatal: (error: Error) => void,
    private readonly transactional: boolean,
  ) {}

  /** Calls not settled yet: their records are not acknowledged (without transactions; 0 in one). */
  get unacknowledged(): number {
    return this.unsettled.size;
  }

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
    // Without transactions records carry no opaque: the failure stops the producer, which fails every call not settled.
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
    this.held.length = 0;
    this.handedOver = [];
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
   * Without transactions a flush acknowledges the call (see {@link scheduleFlush}): the producer is
   * idempotent and gap-less, so records are written in order and none is skipped, and a record
   * that fails stops the producer, which fails every call not settled. In a transaction every
   * record carries its call as its opaque, and is reported on.
   */
  produce(records: readonly OutRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<void>((resolve, reject) => {
      if (!this.transactional) {
        const pending: Pending = { left: 1, resolve, reject };
        this.unsettled.add(pending);
        if (this.flushing) this.held.push({ records, pending });
        else this.handOver(records, pending);
        return;
      }
      // In a transaction every record carries it: a failed record then fails its call at once, not only the commit.
      const pending: Pending = { left: records.length, resolve, reject };
      try {
        for (const record of records) this.send(toProduceArgs(record), pending, true);
      } catch (error) {
        this.settle(pending, error as Error);
      }
    });
  }

  /**
   * Without transactions: hands a call's records to librdkafka, without an opaque (delivery
   * reports come for failures only), and has the next flush acknowledge them.
   */
  private handOver(records: readonly OutRecord[], pending: Pending): void {
    try {
      for (const record of records) this.send(toProduceArgs(record), pending, false);
    } catch (error) {
      // Refused before it left (larger than message.max.bytes, say): as failed for good.
      const failed = error as Error;
      this.settle(pending, failed);
      this.stop(failed);
      return;
    }
    this.handedOver.push(pending);
    this.scheduleFlush();
  }

  /**
   * Without transactions, a call is acknowledged by a flush, as Kafka Streams' commit flushes its
   * producer: librdkafka reports failed records only (`delivery.report.only.error`), so a
   * flush that ends without a failure vouches for every record handed over before it began. A
   * delivery report per record costs the binding an object, a copy of the key and a callback on
   * the main thread, about 6 µs each, and an event writes three or four records. Calls made while
   * a flush runs wait for it to end (librdkafka's flush waits for every record queued, later ones
   * too, so it would not end while records keep coming), then go together.
   */
  private scheduleFlush(): void {
    if (this.flushing || this.flushScheduled) return;
    // At the end of this turn of the main loop: the calls made in it go in one flush.
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      if (this.flushing || this.failure || this.handedOver.length === 0 || this.waiting.length > 0) return;
      this.flushing = true;
      const calls = this.handedOver;
      this.handedOver = [];
      this.flushFor(calls);
    });
  }

  private flushFor(calls: readonly Pending[]): void {
    this.producer.flush(FLUSH_TIMEOUT_MS, (error) => {
      // After the main loop's other callbacks of this turn: a failure's delivery report, sent
      // before the flush could end, is heard before the calls are taken as acknowledged.
      setImmediate(() => this.flushed(calls, error));
    });
  }

  private flushed(calls: readonly Pending[], error: LibrdKafkaError | undefined | null): void {
    if (this.failure) return;
    if (error) {
      // Not all written yet (a broker down, say: records are retried until written or refused): flush again.
      if (error.code === TIMED_OUT) {
        this.logger.warn({ calls: calls.length }, `records unacknowledged after ${FLUSH_TIMEOUT_MS} ms; still waiting`);
        this.flushFor(calls);
        return;
      }
      this.stop(new Error(`Kafka producer flush failed: ${error.message} (code ${error.code})`));
      return;
    }
    for (const pending of calls) this.settle(pending);
    this.flushing = false;
    for (const { records, pending } of this.held.splice(0)) if (!this.failure) this.handOver(records, pending);
    this.scheduleFlush();
  }

  /** Hands one record of the call `pending` to librdkafka, with the call as its opaque if it `vouches` for it (in a transaction: every record). */
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
    if (!this.transactional) this.scheduleFlush();
  }

  /** Waits for every record in flight, then disconnects. */
  async close(timeoutMs = 30_000): Promise<void> {
    // Stopped: nothing queued will be written, so there is nothing to wait for. Otherwise the
    // calls held behind a flush under way are handed over and acknowledged first.
    const until = performance.now() + timeoutMs;
    while (!this.failure && (this.flushing || this.flushScheduled || this.held.length > 0) && performance.now() < until) await sleep(5);
    if (!this.failure) await this.flush(Math.max(0, Math.round(until - performance.now())));
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

const TIMED_OUT = -185;
/** How long one flush waits before it says so and waits again. */
const FLUSH_TIMEOUT_MS = 30_000;

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
