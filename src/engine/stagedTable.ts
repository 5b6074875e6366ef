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
    if (value === undefined || value === null)
      throw new TypeError(`state table '${this.name}': put('${row}', ${String(value)}); a row holds a JSON value: use del('${row}') to remove a row`);
    const key = stateKeys.table(this.name, this.tp, row);
    this.staged.set(key, { type: 'put', key, value });
  }

  /**
   * Makes each staged put's JSON, once the effect has returned: a value JSON cannot hold (a
   * BigInt, a cycle, a function) throws here, naming its row, so that it fails the effect's
   * attempt (retried, then parked) rather than the batch that would write it, which would stop
   * the engine. The stores then write this JSON rather than make it again.
   */
  seal(): void {
    for (const [key, op] of this.staged) {
      if (op.type !== 'put' || op.json !== undefined) continue;
      let json: string | undefined;
      try {
        json = JSON.stringify(op.value) as string | undefined;
      } catch (error) {
        throw new TypeError(`${this.cannotStore(key)}: ${(error as Error).message}; a row is stored as JSON (a BigInt as a string or a number, no cycles)`, {
          cause: error,
        });
      }
      if (json === undefined) throw new TypeError(`${this.cannotStore(key)}: its value (${typeof op.value}) has no JSON form; a row is stored as JSON`);
      this.staged.set(key, { type: 'put', key, value: op.value, json });
    }
  }

  private cannotStore(key: string): string {
    return `state table '${this.name}': row '${key.slice(stateKeys.table(this.name, this.tp, '').length)}' cannot be stored`;
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
