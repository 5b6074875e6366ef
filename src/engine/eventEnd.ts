import type { AtomicOptions, Log, OutRecord, TopicPartition } from '../ports/log.js';
import type { StoreOp } from '../ports/store.js';
import type { StateWriter } from './stateWriter.js';

/** An event's end that has landed and is still becoming durable. */
export interface Landed {
  /** Settles once the end is durable; rejects if it never will be. */
  readonly durable: Promise<void>;
}

/**
 * How an event's end (its state ops, then its outputs) is written. One of three, chosen when the
 * engine is built from what its ports can do, so that no stage branches on the ports:
 * - `plain`: the state write is durable when it settles, then the outputs are sent;
 * - `staged`: the state write lands locally and becomes durable later (the changelog store): the
 *   event's lane goes on once it has landed, and the event finishes once it is durable;
 * - `transactional`: the state write, the outputs and the offsets go in one transaction (an
 *   exactly-once log).
 */
export interface EventEnd {
  readonly kind: 'plain' | 'staged' | 'transactional';
  /** Ends an event of partition `tp` from the log; settles once its end has landed, with `durable` when that is not durable yet. */
  end(tp: TopicPartition, ops: StoreOp[], outputs: readonly OutRecord[]): Promise<Landed | undefined>;
  /**
   * Ends a replayed event: `after` (its removal from its parked key) goes with its state when it
   * has no outputs, else in a batch of its own once they are sent. A replayed event's offset is
   * committed already, so only its held copy, still in the store, can have its outputs sent again
   * (as a DUPLICATE) if the engine crashes before they are out.
   */
  endReplay(tp: TopicPartition, ops: StoreOp[], outputs: readonly OutRecord[], after: () => readonly StoreOp[]): Promise<void>;
  /**
   * Writes state and sends records of partition `tp` as one unit (a park, a hold, a dead letter,
   * an attempts record): one transaction on a transactional log, which then knows that the
   * partition's work is in it (an abort resets only such partitions, see {@link AtomicOptions} for
   * a prune). On a transactional log every write of the engine goes through here or through `end`.
   */
  atomically<T>(tp: TopicPartition, work: () => Promise<T>, options?: AtomicOptions): Promise<T>;
}

/** The end that fits the ports: a transactional log first, then a store that stages its writes. */
export function eventEndFor(log: Log, writer: StateWriter): EventEnd {
  if (log.atomic) return new TransactionalEnd(log, writer);
  if (writer.pipelined) return new StagedEnd(log, writer);
  return new PlainEnd(log, writer);
}

class PlainEnd implements EventEnd {
  readonly kind: EventEnd['kind'] = 'plain';

  constructor(
    protected readonly log: Log,
    protected readonly writer: StateWriter,
  ) {}

  async end(_tp: TopicPartition, ops: StoreOp[], outputs: readonly OutRecord[]): Promise<Landed | undefined> {
    if (ops.length > 0) await this.writer.write(ops);
    if (outputs.length > 0) await this.log.produce(outputs);
    return undefined;
  }

  async endReplay(_tp: TopicPartition, ops: StoreOp[], outputs: readonly OutRecord[], after: () => readonly StoreOp[]): Promise<void> {
    if (outputs.length === 0) for (const op of after()) ops.push(op);
    if (ops.length > 0) await this.writer.write(ops);
    if (outputs.length > 0) {
      await this.log.produce(outputs);
      const removal = after();
      if (removal.length > 0) await this.writer.write(removal);
    }
  }

  atomically<T>(_tp: TopicPartition, work: () => Promise<T>, _options?: AtomicOptions): Promise<T> {
    return work();
  }
}

/** The outputs of the events whose state went in one staged batch: sent together once it is durable. */
interface BatchOutputs {
  /** The batch's `durable`: one promise for all its writes. */
  readonly durable: Promise<void>;
  readonly outputs: OutRecord[];
  /** Settles once the batch is durable and its outputs acknowledged. */
  readonly sent: Promise<void>;
  /** The batch is durable and its outputs handed to the log: none can join them now. */
  sending: boolean;
}

class StagedEnd extends PlainEnd {
  override readonly kind: EventEnd['kind'] = 'staged';
  private batch: BatchOutputs | undefined;

  /**
   * Writes the event's state and returns once it has landed; the outputs go out once the state
   * is durable (a crash before that must not leave outputs of an effect the state lost), and
   * `durable` settles when they are acknowledged. The outputs of the events whose states went in
   * one batch go out in one call, in the order the events ended: the outputs of one key's events
   * go out in their order, since batches become durable in order and each sends in that
   * settlement's turn.
   */
  override async end(_tp: TopicPartition, ops: StoreOp[], outputs: readonly OutRecord[]): Promise<Landed | undefined> {
    if (ops.length > 0) {
      const staged = this.writer.stage(ops);
      const durable = outputs.length > 0 ? this.sendAfter(staged.durable, outputs) : staged.durable;
      await staged.landed;
      return { durable };
    }
    if (outputs.length > 0) return { durable: this.sendBehind(outputs) };
    return undefined;
  }

  /**
   * The outputs of an end that writes no state (a DUPLICATE's stored outputs): the effect record
   * it found may have landed in a batch that is not durable yet, whose own outputs wait for it.
   * They join the last batch's outputs while it is unsent, so that they neither go out for an
   * effect a crash could still lose nor overtake the outputs of their key's earlier events.
   */
  private sendBehind(outputs: readonly OutRecord[]): Promise<void> {
    const batch = this.batch;
    if (!batch || batch.sending) return this.log.produce(outputs);
    for (const record of outputs) batch.outputs.push(record);
    return batch.sent;
  }

  /** A replayed event found done (its record found) sends its stored outputs behind the last batch's, as {@link StagedEnd.end} does. */
  override async endReplay(tp: TopicPartition, ops: StoreOp[], outputs: readonly OutRecord[], after: () => readonly StoreOp[]): Promise<void> {
    if (ops.length > 0 || outputs.length === 0) return super.endReplay(tp, ops, outputs, after);
    await this.sendBehind(outputs);
    const removal = after();
    if (removal.length > 0) await this.writer.write(removal);
  }

  /** Adds `outputs` to those sent once the batch whose `durable` this is has become durable. */
  private sendAfter(durable: Promise<void>, outputs: readonly OutRecord[]): Promise<void> {
    // Called as the state is staged, before its batch can be durable: the batch's send has not run yet.
    if (this.batch?.durable !== durable) {
      const batch: BatchOutputs = {
        durable,
        outputs: [],
        sending: false,
        sent: durable.then(
          () => {
            batch.sending = true;
            return this.log.produce(batch.outputs);
          },
          (error: unknown) => {
            // Never durable: nothing may join it now (the worker fails on it anyway).
            batch.sending = true;
            throw error;
          },
        ),
      };
      // A batch that fails to land leaves its events nothing to wait on here (the failure reaches
      // them through `landed`): its send's rejection must not count as unhandled.
      batch.sent.catch(() => undefined);
      this.batch = batch;
    }
    for (const record of outputs) this.batch.outputs.push(record);
    return this.batch.sent;
  }
}

class TransactionalEnd extends PlainEnd {
  override readonly kind: EventEnd['kind'] = 'transactional';

  override async end(tp: TopicPartition, ops: StoreOp[], outputs: readonly OutRecord[]): Promise<undefined> {
    await this.log.atomic!(async () => {
      if (ops.length > 0) await this.writer.write(ops);
      if (outputs.length > 0) await this.log.produce(outputs);
    }, tp);
    return undefined;
  }

  override endReplay(tp: TopicPartition, ops: StoreOp[], outputs: readonly OutRecord[], after: () => readonly StoreOp[]): Promise<void> {
    return this.log.atomic!(() => super.endReplay(tp, ops, outputs, after), tp);
  }

  override atomically<T>(tp: TopicPartition, work: () => Promise<T>, options?: AtomicOptions): Promise<T> {
    return this.log.atomic!(work, tp, options);
  }
}
