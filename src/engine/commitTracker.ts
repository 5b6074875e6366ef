import { COMMIT_METADATA_MAX_BYTES, readOffsetMetadata, writeOffsetMetadata, offsetsIn, type OffsetRange } from './offsetMetadata.js';

/** What the tracker offers to commit: the offset, and the finished offsets above it as metadata. */
export interface TrackerCommit {
  readonly offset: number;
  /** The finished offsets above `offset` (see offsetMetadata.ts); empty when there are none. */
  readonly metadata: string;
  /** Which finishes it covers, for {@link CommitTracker.committedUpTo}. */
  readonly version: number;
  /** How many finished offsets `metadata` lists (fewer than finished when cut at the byte limit). */
  readonly finishedAbove: number;
}

/** What the tracker made of the commit read back at assignment. */
export interface TrackerResume {
  /** Offsets the commit's metadata listed as finished: skipped when they come again. */
  readonly finishedAbove: number;
  /** Why metadata found there was not used; its offsets run again, as without metadata. */
  readonly ignored?: string;
}

/**
 * Tracks, for one partition, which received offsets have finished, and yields what may be
 * committed: the offset after the contiguous finished prefix, and the finished offsets above it
 * as the commit's metadata. Nothing past the first unfinished event is ever committed, so a crash
 * redelivers what had not finished, and what had finished above it too; a restarted worker, or
 * the partition's next owner, reads the metadata back and skips the latter ({@link resume}).
 */
export class CommitTracker {
  // Offsets received and not yet passed by the prefix, ascending (offsets may have gaps).
  private readonly pending: number[] = [];
  private head = 0;
  private readonly finished = new Set<number>();
  /** The highest offset in `finished` (while it holds any): a walk of the finished offsets stops there. */
  private highestFinished = -1;
  private committable: number | undefined;
  /** The first offset received: committing it moves nothing, so it carries metadata before the prefix moves. */
  private floor: number | undefined;
  private committed: number | undefined;
  private committedMetadata = '';
  /** One more at each finish; the commit last acknowledged covered `committedVersion`. */
  private version = 0;
  private committedVersion = 0;
  /** Offsets the commit read back at assignment listed as finished, ascending; `earlierAt` is the first not yet passed. */
  private earlier: readonly OffsetRange[] = [];
  private earlierAt = 0;

  /** `metadataMaxBytes`: the longest metadata a commit may carry; 0 writes none. */
  constructor(
    private readonly partition: string,
    private readonly metadataMaxBytes: number = COMMIT_METADATA_MAX_BYTES,
  ) {}

  /**
   * Takes the partition's committed offset and metadata as the log read them back at assignment,
   * before any record. The offsets the metadata lists finished before (under this worker before a
   * crash, or under another owner): {@link received} tells them apart when they come again.
   */
  resume(committed: { readonly offset: number; readonly metadata?: string } | undefined): TrackerResume {
    if (this.pending.length > 0) throw new Error(`commit tracker of ${this.partition}: resume() after offsets were received`);
    const reading = readOffsetMetadata(committed?.offset, committed?.metadata);
    this.earlier = reading.ranges;
    this.earlierAt = 0;
    const finishedAbove = offsetsIn(reading.ranges);
    return reading.ignored === undefined ? { finishedAbove } : { finishedAbove, ignored: reading.ignored };
  }

  /**
   * Notes an offset the log delivered. Returns true when it finished before this worker took the
   * partition (its commit's metadata listed it): the caller finishes it at once and runs nothing.
   */
  received(offset: number): boolean {
    const last = this.pending.length > this.head ? this.pending[this.pending.length - 1]! : (this.committable ?? -1) - 1;
    if (offset <= last) {
      throw new Error(`commit tracker of ${this.partition}: offset ${offset} received after ${last}; the log must deliver in order`);
    }
    this.pending.push(offset);
    this.floor ??= offset;
    return this.finishedEarlier(offset);
  }

  finish(offset: number): void {
    if (this.finished.has(offset) || !this.isPending(offset)) {
      throw new Error(`commit tracker of ${this.partition}: offset ${offset} finished twice or never received`);
    }
    this.version += 1;
    this.finished.add(offset);
    if (offset > this.highestFinished) this.highestFinished = offset;
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

  /**
   * What to commit now, or undefined when the log has it already: the offset after the finished
   * prefix (before the prefix moves, the first offset received) and, as metadata, the finished
   * offsets above it, cut at `metadataMaxBytes`.
   */
  toCommit(): TrackerCommit | undefined {
    if (this.version === this.committedVersion) return undefined;
    const offset = this.committable ?? this.floor!;
    const metadata = this.metadataMaxBytes > 0 ? writeOffsetMetadata(offset, this.finishedAbove(offset), this.metadataMaxBytes) : '';
    if (offset === this.committed && metadata === this.committedMetadata) {
      // Nothing the log lacks (finishes past what the metadata can hold, or with metadata off).
      this.committedVersion = this.version;
      return undefined;
    }
    // Before the prefix moves, a commit without metadata would move nothing.
    if (this.committable === undefined && metadata === '') return undefined;
    return { offset, metadata, version: this.version, finishedAbove: metadata === '' ? 0 : offsetsIn(readOffsetMetadata(offset, metadata).ranges) };
  }

  /** Records that `commit` reached the log; its offset must not pass the first unfinished event. */
  committedUpTo(commit: Pick<TrackerCommit, 'offset' | 'metadata' | 'version'>): void {
    const firstUnfinished = this.pending[this.head];
    if (firstUnfinished !== undefined && commit.offset > firstUnfinished) {
      throw new Error(`commit tracker of ${this.partition}: committed ${commit.offset} past unfinished offset ${firstUnfinished}`);
    }
    this.committed = commit.offset;
    this.committedMetadata = commit.metadata;
    this.committedVersion = commit.version;
  }

  /** The offset after the finished prefix: what a commit now would commit; undefined before the prefix moves. */
  get finishedUpTo(): number | undefined {
    return this.committable;
  }

  /** The offset last committed, or undefined before the first commit. */
  get committedOffset(): number | undefined {
    return this.committed;
  }

  /** Events received and not finished. */
  get inProgress(): number {
    return this.pending.length - this.head - this.finished.size;
  }

  /**
   * The finished offsets above `offset` (the prefix) as ranges: from the offsets received, a range
   * runs from a finished offset to the last finished one before the next unfinished offset
   * (offsets between two received ones hold no record, so listing them changes nothing); then the
   * offsets the metadata read back at assignment listed and the log has not delivered again yet,
   * so that a commit before they come keeps them listed.
   */
  private finishedAbove(offset: number): OffsetRange[] {
    const ranges: OffsetRange[] = [];
    const add = (from: number, end: number) => {
      // The committed offset itself is never listed: the commit would have passed it.
      const start = Math.max(from, offset + 1);
      if (end <= start) return;
      const last = ranges[ranges.length - 1];
      if (last && start <= last.end) ranges[ranges.length - 1] = { start: last.start, end: Math.max(last.end, end) };
      else ranges.push({ start, end });
    };
    let start: number | undefined;
    let last = 0;
    for (let i = this.head; this.finished.size > 0 && i < this.pending.length && this.pending[i]! <= this.highestFinished; i++) {
      const received = this.pending[i]!;
      if (this.finished.has(received)) {
        start ??= received;
        last = received;
      } else if (start !== undefined) {
        add(start, last + 1);
        start = undefined;
      }
    }
    if (start !== undefined) add(start, last + 1);
    const after = Math.max(offset, (this.pending[this.pending.length - 1] ?? -1) + 1);
    for (let i = this.earlierAt; i < this.earlier.length; i++) {
      const range = this.earlier[i]!;
      add(Math.max(range.start, after), range.end);
    }
    return ranges;
  }

  private finishedEarlier(offset: number): boolean {
    while (this.earlierAt < this.earlier.length && this.earlier[this.earlierAt]!.end <= offset) this.earlierAt += 1;
    const range = this.earlier[this.earlierAt];
    return range !== undefined && range.start <= offset;
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
