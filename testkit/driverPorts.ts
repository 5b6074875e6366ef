import type { CommitOffset, Log, LogListener, LogRecord, OutRecord, TopicPartition } from '../src/ports/log.js';
import { CommitRefusedError, partitionId } from '../src/ports/log.js';
import type { EntriesOptions, Store, StoreOp } from '../src/ports/store.js';
import type { DriverIo } from './driverIo.js';
import type { DriverTransaction } from './driverTransaction.js';
import type { MemoryLog } from './memoryLog.js';

/**
 * The Store port of one engine instance: reads go straight to the state, writes and scans wait for
 * the driver. With a transaction, each write is part of it (rolled back if it aborts).
 */
export class GatedStore implements Store {
  constructor(
    private readonly owner: string,
    private readonly io: DriverIo,
    private readonly state: () => Store,
    private readonly transaction?: DriverTransaction,
  ) {}

  get location(): string {
    return this.state().location;
  }

  get<T>(key: string): T | undefined {
    return this.state().get<T>(key);
  }

  batch(ops: readonly StoreOp[]): Promise<void> {
    const copy = [...ops];
    return this.io.enqueue(this.owner, { kind: 'batch', ops: copy }, () => {
      this.transaction?.writing(copy, this.state());
      return this.state().batch(copy);
    });
  }

  entries<T>(prefix: string, options?: EntriesOptions): Promise<Array<[string, T]>> {
    return this.io.enqueue(this.owner, { kind: 'scan', prefix }, () => this.state().entries<T>(prefix, options));
  }

  async close(): Promise<void> {
    // The driver owns the state and closes it; an engine instance only lets go of it.
  }
}

/** Where a consumer of the driver's log stands in a partition. */
interface Position {
  readonly tp: TopicPartition;
  offset: number;
  paused: boolean;
  ready: boolean;
}

/**
 * The Log port of one engine instance over the driver's in-memory log. It owns every partition of
 * the subscribed topic (one consumer in the group) and starts each at the group's committed offset.
 * With a transaction it is transactional, as Kafka with exactly-once: what it produces is appended
 * at the next commit, with the offsets, and it offers units ({@link Log.atomic}).
 */
export class DriverConsumer implements Log {
  readonly atomic?: <T>(work: () => Promise<T>) => Promise<T>;
  private listener: LogListener | undefined;
  private readonly positions = new Map<string, Position>();

  constructor(
    private readonly owner: string,
    private readonly io: DriverIo,
    private readonly log: MemoryLog,
    private readonly nowMs: () => number,
    private readonly onDelivered: (record: LogRecord) => void,
    private readonly commitAheadBy = 0,
    private refuseCommits = 0,
    private readonly transaction?: DriverTransaction,
  ) {
    if (transaction) this.atomic = (work) => transaction.unit(work);
  }

  async subscribe(topics: readonly string[], listener: LogListener): Promise<void> {
    this.listener = listener;
    const tps = topics.flatMap((topic) => this.log.partitions(topic).map((_, partition) => ({ topic, partition })));
    for (const tp of tps) this.positions.set(partitionId(tp), { tp, offset: this.log.committed(tp), paused: false, ready: false });
    await listener.assigned(tps);
    for (const position of this.positions.values()) position.ready = true;
  }

  pause(tps: readonly TopicPartition[]): void {
    for (const tp of tps) this.position(tp).paused = true;
  }

  resume(tps: readonly TopicPartition[]): void {
    for (const tp of tps) this.position(tp).paused = false;
  }

  commit(offsets: readonly CommitOffset[]): Promise<void> {
    for (const o of offsets) {
      const polled = this.positions.get(partitionId(o))?.offset;
      if (polled !== undefined && o.offset > polled) throw new Error(`commit of ${partitionId(o)} at ${o.offset}, but only offsets below ${polled} were polled`);
    }
    const commit = () =>
      this.io.enqueue(this.owner, { kind: 'commit', offsets }, async () => {
        // As Kafka would: a partition taken away (or a commit refused on purpose) fails the whole commit.
        const gone = offsets.filter((o) => !this.positions.has(partitionId(o))).map((o) => partitionId(o));
        if (gone.length > 0) throw new CommitRefusedError(`commit refused: ${gone.join(', ')} no longer assigned to this consumer`);
        if (this.refuseCommits > 0) {
          this.refuseCommits -= 1;
          throw new CommitRefusedError('commit refused: a rebalance is in progress (a fault of the driver)');
        }
        for (const r of this.transaction?.committed() ?? []) this.log.append(r, this.nowMs());
        for (const o of offsets) this.log.commit(o, Math.min(o.offset + this.commitAheadBy, this.position(o).offset));
      });
    return this.transaction ? this.transaction.commit(commit) : commit();
  }

  /**
   * Takes partitions away, as a rebalance does: no more of their records are delivered, then the
   * engine is told (revoked: it may still commit them; lost: it may not), then they are forgotten.
   */
  async revoke(tps: readonly TopicPartition[], lost: boolean): Promise<void> {
    for (const tp of tps) this.position(tp).ready = false;
    if (this.listener) await (lost ? this.listener.lost(tps) : this.listener.revoked(tps));
    for (const tp of tps) this.positions.delete(partitionId(tp));
  }

  /** Assigns partitions again, from the group's committed offsets. */
  async assign(tps: readonly TopicPartition[]): Promise<void> {
    for (const tp of tps) {
      if (this.positions.has(partitionId(tp))) throw new Error(`${partitionId(tp)} is assigned to this consumer already`);
      this.positions.set(partitionId(tp), { tp, offset: this.log.committed(tp), paused: false, ready: false });
    }
    if (this.listener) await this.listener.assigned(tps);
    for (const tp of tps) this.position(tp).ready = true;
  }

  produce(records: readonly OutRecord[]): Promise<void> {
    return this.io.enqueue(this.owner, { kind: 'produce', records }, async () => {
      if (this.transaction) this.transaction.produced(records);
      else for (const r of records) this.log.append(r, this.nowMs());
    });
  }

  highWatermark(tp: TopicPartition): number {
    return this.log.endOffset(tp);
  }

  async close(): Promise<void> {
    this.listener = undefined;
  }

  /** Delivers up to `max` records of each partition that has some; returns how many it delivered. */
  poll(max: number): number {
    if (!this.listener) return 0;
    let delivered = 0;
    for (const position of this.positions.values()) {
      if (!position.ready || position.paused) continue;
      const batch = this.log.read(position.tp, position.offset, max);
      if (batch.length === 0) continue;
      position.offset += batch.length;
      for (const r of batch) this.onDelivered(r);
      this.listener.records(batch);
      delivered += batch.length;
    }
    return delivered;
  }

  private position(tp: TopicPartition): Position {
    const position = this.positions.get(partitionId(tp));
    if (!position) throw new Error(`${partitionId(tp)} is not assigned to this consumer`);
    return position;
  }
}
