/** The partitions whose work a transaction holds, by id; `all` when some unit or record named none. */
export type TouchedPartitions = ReadonlySet<string> | 'all';

/**
 * The door of a transaction being thrown away after an abort (exactly-once), the same for Kafka's
 * transactions and the test driver's: while it is shut, only units of the partitions being
 * dropped enter (they may still be writing what goes down with the transaction); the others wait
 * for the next transaction, so that nothing of theirs is lost with it.
 */
export class DiscardGate {
  private shut = false;
  /** While shut: the partitions being dropped, or undefined before they are known. */
  private dropping: TouchedPartitions | undefined;
  /** Settles when `dropping` grows or the door opens: the units held back look again. */
  private moved: Promise<void> = Promise.resolve();
  private wake: (() => void) | undefined;

  /** True from {@link close} to {@link open}. */
  get discarding(): boolean {
    return this.shut;
  }

  /** What a unit of `partition` waits on before it looks again, or undefined when it may enter now. */
  heldBack(partition: string | undefined): Promise<void> | undefined {
    if (!this.shut) return undefined;
    const dropping = this.dropping;
    if (dropping === 'all' || (partition !== undefined && dropping?.has(partition))) return undefined;
    return this.moved;
  }

  /** Shuts the door: units that come now wait until the partitions to drop are known. */
  close(): void {
    this.shut = true;
    this.announce();
  }

  /**
   * Calls `drop` with the partitions `touched` names and the `lost` ones, then again with those
   * touched meanwhile (their units may enter and write), until none is left; returns every
   * partition dropped. `drop` is called at least once (with none, when nothing was touched).
   *
   * `lost` partitions (taken from this worker, touched or not) are dropped with the others: their
   * units enter too, so that what they write goes down with the transaction. Held back, a unit
   * of a lost partition that the transaction never touched would wait for the door to open, while
   * the drop waits for that very unit to end.
   */
  async dropTouched(
    touched: () => TouchedPartitions,
    drop: (partitions: TouchedPartitions) => Promise<void>,
    lost: ReadonlySet<string> = NONE,
  ): Promise<TouchedPartitions> {
    const dropped = new Set<string>();
    for (let first = true; ; first = false) {
      const now = withLost(touched(), lost);
      const more = now === 'all' ? 'all' : new Set([...now].filter((id) => !dropped.has(id)));
      if (!first && (this.dropping === 'all' || (more !== 'all' && more.size === 0))) break;
      if (more !== 'all') for (const id of more) dropped.add(id);
      this.dropping = more === 'all' ? 'all' : dropped;
      this.announce();
      await drop(more);
    }
    return this.dropping ?? dropped;
  }

  /** The transaction is gone: the units held back enter the next one. */
  open(): void {
    this.shut = false;
    this.dropping = undefined;
    this.announce();
  }

  private announce(): void {
    const wake = this.wake;
    this.moved = new Promise((resolve) => (this.wake = resolve));
    wake?.();
  }
}

const NONE: ReadonlySet<string> = new Set();

function withLost(touched: TouchedPartitions, lost: ReadonlySet<string>): TouchedPartitions {
  return touched === 'all' || lost.size === 0 ? touched : new Set([...touched, ...lost]);
}
