import type { CommitOffset, Log, LogListener, LogRecord, OutRecord, TopicPartition } from '../src/ports/log.js';
import { CommitRefusedError, partitionId } from '../src/ports/log.js';
import type { EntriesOptions, Store, StoreOp } from '../src/ports/store.js';
import type { DriverIo } from './driverIo.js';
import type { MemoryLog } from './memoryLog.js';

/** The Store port of one engine instance: reads go straight to the state, writes and scans wait for the driver. */
export class GatedStore implements Store {
  constructor(
    private readonly owner: string,
    private readonly io: DriverIo,
    private readonly state: () => Store,
    /** A fault: a batch that records an effect is written in two (see DriverOptions.faults). */
    private readonly splitEffectBatch?: 'state-first' | 'record-first',
  ) {}

  get location(): string {
    return this.state().location;
  }

  get<T>(key: string): T | undefined {
    return this.state().get<T>(key);
  }

  batch(ops: readonly StoreOp[]): Promise<void> {
    if (this.splitEffectBatch) {
      const [rest, effects] = splitEffects(ops);
      const [first, second] = this.splitEffectBatch === 'state-first' ? [rest, effects] : [effects, rest];
      if (rest.length > 0 && effects.length > 0) return this.write(first).then(() => this.write(second));
    }
    return this.write(ops);
  }

  private write(ops: readonly StoreOp[]): Promise<void> {
    const copy = [...ops];
    return this.io.enqueue(this.owner, { kind: 'batch', ops: copy }, () => this.state().batch(copy));
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
 */
export class DriverConsumer implements Log {
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
  ) {}

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
    return this.io.enqueue(this.owner, { kind: 'commit', offsets }, async () => {
      // As Kafka would: a partition taken away (or a commit refused on purpose) fails the whole commit.
      const gone = offsets.filter((o) => !this.positions.has(partitionId(o))).map((o) => partitionId(o));
      if (gone.length > 0) throw new CommitRefusedError(`commit refused: ${gone.join(', ')} no longer assigned to this consumer`);
      if (this.refuseCommits > 0) {
        this.refuseCommits -= 1;
        throw new CommitRefusedError('commit refused: a rebalance is in progress (a fault of the driver)');
      }
      for (const o of offsets) this.log.commit(o, Math.min(o.offset + this.commitAheadBy, this.position(o).offset));
    });
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
      for (const r of records) this.log.append(r, this.nowMs());
    });
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

/** The ops of a batch that are not effect records, and those that are. */
function splitEffects(ops: readonly StoreOp[]): [StoreOp[], StoreOp[]] {
  const isEffect = (op: StoreOp) => op.type === 'put' && op.key.startsWith('effect/');
  return [ops.filter((op) => !isEffect(op)), ops.filter(isEffect)];
}
