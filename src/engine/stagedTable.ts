import type { StateTable } from '../graph/effect.js';
import type { TopicPartition } from '../ports/log.js';
import type { Store, StoreOp } from '../ports/store.js';
import { stateKeys } from '../state/stateKeys.js';

/** An effect's state table whose writes wait, staged, for the batch that records the effect. */
export class StagedTable implements StateTable {
  private readonly staged = new Map<string, StoreOp>();

  constructor(
    private readonly store: Store,
    private readonly name: string,
    /** The partition of the event that applies the effect: a table's rows are the partition's. */
    private readonly tp: TopicPartition,
  ) {}

  get<V>(row: string): V | undefined {
    const key = stateKeys.table(this.name, this.tp, row);
    const op = this.staged.get(key);
    if (op) return op.type === 'put' ? (op.value as V) : undefined;
    return this.store.get<V>(key);
  }

  put(row: string, value: unknown): void {
    if (value === undefined) throw new TypeError(`state table '${this.name}': put('${row}', undefined); use del('${row}') to remove a row`);
    const key = stateKeys.table(this.name, this.tp, row);
    this.staged.set(key, { type: 'put', key, value });
  }

  del(row: string): void {
    const key = stateKeys.table(this.name, this.tp, row);
    this.staged.set(key, { type: 'del', key });
  }

  ops(): StoreOp[] {
    return [...this.staged.values()];
  }

  /** Appends the staged ops to `ops`, in the order their rows were first written. */
  stageInto(ops: StoreOp[]): void {
    for (const op of this.staged.values()) ops.push(op);
  }
}
