import { describe, expect, it } from 'vitest';
import { CommitTracker } from '../../../src/engine/commitTracker.js';
import { readOffsetMetadata, writeOffsetMetadata } from '../../../src/engine/offsetMetadata.js';

function tracker(...offsets: number[]): CommitTracker {
  const t = new CommitTracker('disputes/0');
  for (const o of offsets) t.received(o);
  return t;
}

/** The offset to commit now, or undefined. */
const offsetOf = (t: CommitTracker) => t.toCommit()?.offset;

/** The finished offsets the commit offered now lists above its offset. */
function listed(t: CommitTracker): number[] {
  const commit = t.toCommit();
  if (!commit) return [];
  const offsets = readOffsetMetadata(commit.offset, commit.metadata).ranges.flatMap((r) => Array.from({ length: r.end - r.start }, (_, i) => r.start + i));
  // What the observer hears: as many as the metadata lists.
  expect(commit.finishedAbove).toBe(offsets.length);
  return offsets;
}

describe('CommitTracker', () => {
  it('has nothing to commit before anything finishes', () => {
    const t = tracker(0, 1, 2);
    expect(t.toCommit()).toBeUndefined();
    expect(t.inProgress).toBe(3);
  });

  it('commits the contiguous finished prefix: the offset after its last event', () => {
    const t = tracker(0, 1, 2, 3);
    t.finish(0);
    expect(t.toCommit()).toEqual({ offset: 1, metadata: '', version: 1, finishedAbove: 0 });
    t.finish(1);
    expect(offsetOf(t)).toBe(2);
    t.finish(3);
    expect(offsetOf(t)).toBe(2);
    t.finish(2);
    expect(t.toCommit()).toEqual({ offset: 4, metadata: '', version: 4, finishedAbove: 0 });
    expect(t.inProgress).toBe(0);
  });

  it('lists the finished events above an unfinished one in the metadata, then passes them all at once', () => {
    const t = tracker(10, 11, 12, 13);
    t.finish(13);
    t.finish(11);
    // Before the prefix moves, the commit is at the first offset received: it moves nothing, and carries the list.
    expect(offsetOf(t)).toBe(10);
    expect(listed(t)).toEqual([11, 13]);
    t.finish(12);
    expect(listed(t)).toEqual([11, 12, 13]);
    expect(t.inProgress).toBe(1);
    t.finish(10);
    expect(t.toCommit()).toEqual({ offset: 14, metadata: '', version: 4, finishedAbove: 0 });
  });

  it('handles gaps in the offsets (compacted or transactional topics)', () => {
    const t = tracker(0, 2, 5, 9);
    t.finish(0);
    expect(offsetOf(t)).toBe(1);
    t.finish(5);
    expect(offsetOf(t)).toBe(1);
    expect(listed(t)).toEqual([5]);
    t.finish(9);
    // 5 and 9 hold the only records between 2 and the end: one run lists them (6–8 hold none).
    expect(listed(t)).toEqual([5, 6, 7, 8, 9]);
    t.finish(2);
    expect(t.toCommit()).toEqual({ offset: 10, metadata: '', version: 4, finishedAbove: 0 });
  });

  it('starts from any offset (a restart from a committed offset)', () => {
    const t = tracker(1000);
    t.finish(1000);
    expect(offsetOf(t)).toBe(1001);
  });

  it('offers a commit once: after committedUpTo it has nothing new until more finishes', () => {
    const t = tracker(0, 1, 2);
    t.finish(0);
    t.committedUpTo(t.toCommit()!);
    expect(t.toCommit()).toBeUndefined();
    t.finish(2);
    // The prefix stays, the list grows: the log must hear it.
    expect(offsetOf(t)).toBe(1);
    expect(listed(t)).toEqual([2]);
    t.committedUpTo(t.toCommit()!);
    expect(t.toCommit()).toBeUndefined();
    t.finish(1);
    expect(offsetOf(t)).toBe(3);
  });

  it('offers again what finished while a commit was on its way', () => {
    const t = tracker(0, 1, 2, 3);
    t.finish(2);
    const first = t.toCommit()!;
    t.finish(3);
    t.committedUpTo(first);
    expect(listed(t)).toEqual([2, 3]);
  });

  it('with metadata off (0 bytes), commits the prefix alone, as before', () => {
    const t = new CommitTracker('disputes/0', 0);
    for (const o of [0, 1, 2]) t.received(o);
    t.finish(2);
    expect(t.toCommit()).toBeUndefined();
    t.finish(0);
    expect(t.toCommit()).toEqual({ offset: 1, metadata: '', version: 2, finishedAbove: 0 });
    t.committedUpTo(t.toCommit()!);
    expect(t.toCommit()).toBeUndefined();
  });

  it('cuts the list at its byte limit, and offers nothing new for finishes past it', () => {
    const t = new CommitTracker('disputes/0', 12);
    for (let o = 0; o < 60; o++) t.received(o);
    for (let o = 1; o < 60; o += 2) t.finish(o);
    // 'o1:0:b' and 4 characters of base64: 3 bytes, 24 bits, offsets 0 to 23.
    expect(listed(t)).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23]);
    t.committedUpTo(t.toCommit()!);
    t.finish(58);
    expect(t.toCommit()).toBeUndefined();
  });

  it('allows a commit up to the first unfinished offset, and refuses one past it', () => {
    const t = tracker(0, 1, 2, 3);
    t.finish(0);
    t.finish(2);
    t.finish(3);
    const commit = (offset: number) => ({ offset, metadata: '', version: 3 });
    expect(() => t.committedUpTo(commit(1))).not.toThrow();
    expect(() => t.committedUpTo(commit(2))).toThrow('commit tracker of disputes/0: committed 2 past unfinished offset 1');
    expect(() => t.committedUpTo(commit(4))).toThrow(/past unfinished offset 1/);
  });

  it('refuses a commit past an unfinished offset that follows a gap', () => {
    const t = tracker(0, 7);
    t.finish(0);
    expect(() => t.committedUpTo({ offset: 1, metadata: '', version: 1 })).not.toThrow();
    expect(() => t.committedUpTo({ offset: 8, metadata: '', version: 1 })).toThrow(/committed 8 past unfinished offset 7/);
  });

  it('throws when an offset finishes twice, before or after the prefix passed it', () => {
    const t = tracker(0, 1, 2);
    t.finish(2);
    expect(() => t.finish(2)).toThrow('commit tracker of disputes/0: offset 2 finished twice or never received');
    t.finish(0);
    expect(() => t.finish(0)).toThrow(/offset 0 finished twice or never received/);
    expect(offsetOf(t)).toBe(1);
  });

  it('throws when an offset never received finishes', () => {
    const t = tracker(0, 2);
    expect(() => t.finish(1)).toThrow(/offset 1 finished twice or never received/);
    expect(() => t.finish(3)).toThrow(/offset 3 finished twice or never received/);
  });

  it('throws when the log delivers out of order or twice', () => {
    const t = tracker(0, 1);
    expect(() => t.received(1)).toThrow('commit tracker of disputes/0: offset 1 received after 1; the log must deliver in order');
    expect(() => t.received(0)).toThrow(/received after 1/);
    t.finish(0);
    t.finish(1);
    expect(() => t.received(1)).toThrow(/received after 1/);
    expect(() => t.received(2)).not.toThrow();
  });

  it('keeps the prefix right over thousands of offsets finished out of order (it compacts as it goes)', () => {
    const t = new CommitTracker('disputes/3');
    const n = 5000;
    for (let o = 0; o < n; o++) t.received(o * 2);
    // Finish in blocks of ten, each block backwards: the prefix advances by whole blocks.
    for (let block = 0; block < n / 10; block++) {
      for (let i = 9; i >= 0; i--) {
        const offset = (block * 10 + i) * 2;
        t.finish(offset);
        if (i > 0) expect(offsetOf(t)).toBe(block === 0 ? 0 : block * 20 - 1);
      }
      expect(offsetOf(t)).toBe((block + 1) * 20 - 1);
    }
    expect(t.inProgress).toBe(0);
    expect(() => t.received(n * 2 - 2)).toThrow(/received after/);
    t.received(n * 2);
    expect(() => t.committedUpTo({ offset: n * 2 + 1, metadata: '', version: 0 })).toThrow(/past unfinished offset 10000/);
  });

  describe('resume: the commit read back at assignment', () => {
    const metadata = writeOffsetMetadata(10, [
      { start: 12, end: 15 },
      { start: 20, end: 21 },
    ]);

    it('tells which received offsets finished before, so that they run no more', () => {
      const t = new CommitTracker('disputes/0');
      expect(t.resume({ offset: 10, metadata })).toEqual({ finishedAbove: 4 });
      const before = [10, 11, 12, 13, 14, 15, 20, 21].filter((o) => t.received(o));
      expect(before).toEqual([12, 13, 14, 20]);
    });

    it('keeps listing the offsets read back until they come again, so that a commit before then loses none', () => {
      const t = new CommitTracker('disputes/0');
      t.resume({ offset: 10, metadata });
      t.received(10);
      expect(t.received(11)).toBe(false);
      t.finish(11);
      expect(offsetOf(t)).toBe(10);
      expect(listed(t)).toEqual([11, 12, 13, 14, 20]);
      t.finish(10);
      // The prefix is at 12, which has not come again: it is left out (a commit never lists its own offset).
      expect(offsetOf(t)).toBe(12);
      expect(listed(t)).toEqual([13, 14, 20]);
    });

    it('ignores metadata it cannot use, saying why, and skips nothing', () => {
      const t = new CommitTracker('disputes/0');
      expect(t.resume({ offset: 11, metadata })).toEqual({ finishedAbove: 0, ignored: 'it belongs to offset 10, and the committed offset is 11' });
      expect([11, 12, 13].filter((o) => t.received(o))).toEqual([]);
      expect(new CommitTracker('disputes/0').resume(undefined)).toEqual({ finishedAbove: 0 });
    });

    it('is refused once offsets were received', () => {
      const t = tracker(10);
      expect(() => t.resume({ offset: 10, metadata })).toThrow('commit tracker of disputes/0: resume() after offsets were received');
    });
  });
});
