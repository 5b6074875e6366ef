/**
 * Tracks, for one partition, which received offsets have finished, and yields the offset that may
 * be committed: the one after the contiguous finished prefix. Nothing past the first unfinished
 * event is ever committable, so a crash redelivers exactly what had not finished.
 */
export class CommitTracker {
  // Offsets received and not yet passed by the prefix, ascending (offsets may have gaps).
  private readonly pending: number[] = [];
  private head = 0;
  private readonly finished = new Set<number>();
  private committable: number | undefined;
  private committed: number | undefined;

  constructor(private readonly partition: string) {}

  received(offset: number): void {
    const last = this.pending.length > this.head ? this.pending[this.pending.length - 1]! : (this.committable ?? -1) - 1;
    if (offset <= last) {
      throw new Error(`commit tracker of ${this.partition}: offset ${offset} received after ${last}; the log must deliver in order`);
    }
    this.pending.push(offset);
  }

  finish(offset: number): void {
    if (this.finished.has(offset) || !this.isPending(offset)) {
      throw new Error(`commit tracker of ${this.partition}: offset ${offset} finished twice or never received`);
    }
    this.finished.add(offset);
    while (this.head < this.pending.length && this.finished.has(this.pending[this.head]!)) {
      const done = this.pending[this.head++]!;
      this.finished.delete(done);
      this.committable = done + 1;
    }
    if (this.head > 1024 && this.head * 2 > this.pending.length) {
      this.pending.splice(0, this.head);
      this.head = 0;
    }
  }

  /** The offset to commit now, or undefined when nothing new has finished. */
  toCommit(): number | undefined {
    return this.committable !== undefined && this.committable !== this.committed ? this.committable : undefined;
  }

  /** Records that `offset` was committed; it must not pass the first unfinished event. */
  committedUpTo(offset: number): void {
    const firstUnfinished = this.pending[this.head];
    if (firstUnfinished !== undefined && offset > firstUnfinished) {
      throw new Error(`commit tracker of ${this.partition}: committed ${offset} past unfinished offset ${firstUnfinished}`);
    }
    this.committed = offset;
  }

  /** The offset last committed, or undefined before the first commit. */
  get committedOffset(): number | undefined {
    return this.committed;
  }

  /** Events received and not finished. */
  get inProgress(): number {
    return this.pending.length - this.head - this.finished.size;
  }

  private isPending(offset: number): boolean {
    // Binary search: pending is ascending.
    let lo = this.head;
    let hi = this.pending.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const value = this.pending[mid]!;
      if (value === offset) return true;
      if (value < offset) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }
}
