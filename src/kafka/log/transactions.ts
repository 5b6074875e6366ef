import type { KafkaConsumer } from '@confluentinc/kafka-javascript';
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CommitOffset, OutRecord } from '../../ports/log.js';
import { TransactionError, type AckedProducer } from './ackedProducer.js';
import { offsetIds } from './commitWaiter.js';
import { DiscardGate } from '../../ports/discardGate.js';

/**
 * Where the transaction stands. `open`: records go in; `draining`: a commit waits for the units
 * running now to end, and no new unit starts; `committing`: offsets and commit are on their way,
 * and every record waits for the next transaction.
 */
type Phase = 'open' | 'draining' | 'committing';

export interface TransactionsOptions {
  /** Timeout of each transactional call. */
  readonly callTimeoutMs: number;
  /**
   * The longest a transaction with records in it stays open when no offset moves (a key waits on
   * a long Retry-After while others finish): it is then committed without offsets, well before
   * the broker's transaction.timeout.ms would abort it.
   */
  readonly maxOpenMs: number;
}

/**
 * Exactly-once over one transactional producer: every record (outputs, changelog, parking) and
 * the input offsets of a commit land in one transaction. Units ({@link Transactions.unit}) are
 * never split by a commit, so an event's effect record and its outputs are committed together.
 *
 * A failed commit is not retried past what librdkafka allows: the worker's local state already
 * holds what the lost transaction held, so the caller must stop, and the next start rebuilds that
 * state from the (read_committed) changelog.
 */
export class Transactions {
  private phase: Phase = 'open';
  private running = 0;
  private drained: (() => void) | undefined;
  private reopened: Promise<void> = Promise.resolve();
  private reopen: (() => void) | undefined;
  private committing: Promise<void> = Promise.resolve();
  private produced = false;
  private openedAt = Date.now();
  private readonly timer: NodeJS.Timeout;
  private failed: Error | undefined;
  /** While shut (discarding), nothing is committed: the records produced now belong to work being thrown away. */
  private readonly gate = new DiscardGate();
  /**
   * The input partitions whose work the transactions since the last commit hold: those whose
   * units entered them (see {@link unit}). An abortable failure of a commit keeps them: the
   * discard that follows throws away that work with the next transaction's.
   */
  private readonly touched = new Set<string>();
  /** A unit without a partition, or a record produced outside any unit: the work of any partition may be in it. */
  private touchedAll = false;

  private constructor(
    private readonly producer: AckedProducer,
    private readonly consumer: () => KafkaConsumer,
    private readonly logger: Logger,
    private readonly options: TransactionsOptions,
    private readonly commitStale: () => void,
  ) {
    this.timer = setInterval(() => this.commitIfStale(), Math.max(50, Math.floor(options.maxOpenMs / 4)));
    this.timer.unref();
  }

  /**
   * Begins the first transaction (the producer ran initTransactions when it connected).
   * `commitStale` is asked to commit when a transaction with records has stayed open for
   * `maxOpenMs`: the caller knows which offsets to send with it.
   */
  static async begin(
    producer: AckedProducer,
    consumer: () => KafkaConsumer,
    logger: Logger,
    options: TransactionsOptions,
    commitStale: () => void,
  ): Promise<Transactions> {
    await producer.beginTransaction();
    return new Transactions(producer, consumer, logger, options, commitStale);
  }

  /**
   * Runs `work` inside the current transaction: a commit waits for it, and it waits for a commit
   * under way. `partition` (its id, `topic/partition`) is the input partition whose work it
   * writes: an abort resets the partitions whose units entered the aborted transaction, but for
   * units that only prune (`prunesOnly`, see AtomicOptions). While a
   * transaction is being thrown away, only units of the partitions dropped with it enter (they
   * may still be writing what goes down with it); the others wait for the next transaction, so
   * that nothing of theirs is lost with it.
   */
  async unit<T>(work: () => Promise<T>, partition?: string, prunesOnly = false): Promise<T> {
    for (;;) {
      if (this.phase !== 'open') await this.reopened;
      else {
        const heldBack = this.gate.heldBack(partition);
        if (!heldBack) break;
        await heldBack;
      }
    }
    this.throwIfFailed();
    if (prunesOnly) {
      // Its deletes may be lost with an abort (see AtomicOptions.prunesOnly): it touches nothing.
    } else if (partition === undefined) this.touchedAll = true;
    else this.touched.add(partition);
    this.running += 1;
    try {
      return await work();
    } finally {
      this.running -= 1;
      if (this.running === 0) this.drained?.();
    }
  }

  /** Sends records in the current transaction; settles once the broker has them (not yet committed). */
  async produce(records: readonly OutRecord[]): Promise<void> {
    while (this.phase === 'committing') await this.reopened;
    this.throwIfFailed();
    // Outside any unit, nothing says whose work it is.
    if (this.running === 0) this.touchedAll = true;
    this.produced = true;
    await this.producer.produce(records);
  }

  /**
   * Commits the transaction with these input offsets (none: only the records), after the units
   * running now have ended, and begins the next one. Commits run one at a time.
   */
  commit(offsets: readonly CommitOffset[]): Promise<void> {
    const next = this.committing.then(() => this.commitNow(offsets));
    this.committing = next.catch(() => undefined);
    return next;
  }

  /** Aborts what the open transaction holds (nothing, after a clean stop's final commit) and stops the timer. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.committing;
    if (this.failed || !this.produced) return;
    try {
      await this.producer.abortTransaction(this.options.callTimeoutMs);
      this.logger.warn('aborted the open transaction at close: records produced after the last commit are discarded');
    } catch (error) {
      this.logger.warn({ err: error }, 'abort at close failed');
    }
  }

  /**
   * Throws away what the open transaction holds (and what an aborted commit held before it):
   * commits are refused, and `drop` is called with the partitions whose units entered it ('all'
   * when any unit or record named none), then again with those its units' last writes touched
   * meanwhile, until none is left; `drop` ends their work. Then the transaction is aborted and a
   * new one begun. `drop` is called at least once (with none, when nothing was touched), so that
   * partitions lost meanwhile can be dropped before the abort too. Units of other partitions
   * wait meanwhile, so nothing of theirs is in the aborted transaction: they go on in the next.
   */
  async discard(drop: (partitions: ReadonlySet<string> | 'all') => Promise<void>, lost: ReadonlySet<string>): Promise<void> {
    // Units that come now wait until the partitions to drop are known.
    this.gate.close();
    try {
      await this.committing;
      await this.gate.dropTouched(
        () => (this.touchedAll ? 'all' : this.touched),
        (partitions) => {
          this.logger.debug(
            { partitions: partitions === 'all' ? 'all' : [...partitions] },
            'discard: dropping the partitions whose work the transaction holds',
          );
          return drop(partitions);
        },
        lost,
      );
      this.logger.debug('discard: aborting the transaction');
      await this.producer.abortTransaction(this.options.callTimeoutMs);
      this.produced = false;
      this.openedAt = Date.now();
      this.touched.clear();
      this.touchedAll = false;
      await this.producer.beginTransaction();
    } catch (error) {
      this.failed ??= error as Error;
      throw error;
    } finally {
      this.gate.open();
    }
  }

  private async commitNow(offsets: readonly CommitOffset[]): Promise<void> {
    this.throwIfFailed();
    if (this.gate.discarding) throw new TransactionAbortedError('the open transaction is being thrown away after an aborted one');
    if (offsets.length === 0 && !this.produced) return;
    this.phase = 'draining';
    this.reopened = new Promise((resolve) => (this.reopen = resolve));
    try {
      if (this.running > 0) await new Promise<void>((resolve) => (this.drained = resolve));
      this.drained = undefined;
      this.phase = 'committing';
      if (offsets.length > 0)
        await this.retrying('sendOffsetsToTransaction', () => this.producer.sendOffsetsToTransaction(offsets, this.consumer(), this.options.callTimeoutMs));
      await this.retrying('commitTransaction', () => this.producer.commitTransaction(this.options.callTimeoutMs));
      this.logger.debug({ offsets: offsetIds(offsets) }, 'transaction committed');
      this.produced = false;
      // Units enter again only once the phase is open (below), so none of the next transaction's is counted here.
      this.touched.clear();
      this.touchedAll = false;
      this.openedAt = Date.now();
      await this.producer.beginTransaction();
    } catch (error) {
      if (error instanceof TransactionError && error.requiresAbort && !error.fatal) {
        // Abortable (the group moved on to a new generation, say): abort, begin anew and let the
        // caller throw away the work whose writes were in it.
        try {
          await this.producer.abortTransaction(this.options.callTimeoutMs);
          this.produced = false;
          this.openedAt = Date.now();
          await this.producer.beginTransaction();
        } catch (abortError) {
          this.failed = abortError as Error;
          throw abortError;
        }
        throw new TransactionAbortedError(error.message, { cause: error });
      }
      this.failed = error as Error;
      throw error;
    } finally {
      this.phase = 'open';
      this.reopen?.();
    }
  }

  /** librdkafka marks some failures retriable: the same call may then be made again. */
  private async retrying(what: string, call: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await call();
      } catch (error) {
        if (!(error instanceof TransactionError) || !error.retriable || attempt >= 5) throw error;
        this.logger.warn({ attempt, code: error.code }, `${what}: ${error.message}; retrying`);
        await sleep(100 * attempt);
      }
    }
  }

  private commitIfStale(): void {
    if (this.failed || this.gate.discarding || !this.produced || this.phase !== 'open') return;
    if (Date.now() - this.openedAt < this.options.maxOpenMs) return;
    this.commitStale();
  }

  private throwIfFailed(): void {
    if (this.failed) throw new Error(`the Kafka transaction failed earlier (${this.failed.message}); this worker must restart`, { cause: this.failed });
  }
}

/**
 * The transaction was aborted, not lost for good: its records and offsets never happened, so the
 * work they held must be thrown away (the partitions reset to their committed offsets and their
 * state rebuilt from the committed changelog); the producer goes on with a new transaction.
 */
export class TransactionAbortedError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TransactionAbortedError';
  }
}
