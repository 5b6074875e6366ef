import { describe, expect, it } from 'vitest';
import { CommitTracker } from '../../../src/engine/commitTracker.js';

function tracker(...offsets: number[]): CommitTracker {
  const t = new CommitTracker('disputes/0');
  for (const o of offsets) t.received(o);
  return t;
}

describe('CommitTracker', () => {
  it('has nothing to commit before anything finishes', () => {
    const t = tracker(0, 1, 2);
    expect(t.toCommit()).toBeUndefined();
    expect(t.inProgress).toBe(3);
  });

  it('commits the contiguous finished prefix only: the offset after its last event', () => {
    const t = tracker(0, 1, 2, 3);
    t.finish(0);
    expect(t.toCommit()).toBe(1);
    t.finish(1);
    expect(t.toCommit()).toBe(2);
    t.finish(3);
    expect(t.toCommit()).toBe(2);
    t.finish(2);
    expect(t.toCommit()).toBe(4);
    expect(t.inProgress).toBe(0);
  });

  it('keeps later finished events uncommittable while an earlier one runs, then passes them all at once', () => {
    const t = tracker(10, 11, 12, 13);
    t.finish(13);
    t.finish(12);
    t.finish(11);
    expect(t.toCommit()).toBeUndefined();
    expect(t.inProgress).toBe(1);
    t.finish(10);
    expect(t.toCommit()).toBe(14);
  });

  it('handles gaps in the offsets (compacted or transactional topics)', () => {
    const t = tracker(0, 2, 5, 9);
    t.finish(0);
    expect(t.toCommit()).toBe(1);
    t.finish(5);
    expect(t.toCommit()).toBe(1);
    t.finish(2);
    expect(t.toCommit()).toBe(6);
    t.finish(9);
    expect(t.toCommit()).toBe(10);
  });

  it('starts from any offset (a restart from a committed offset)', () => {
    const t = tracker(1000);
    t.finish(1000);
    expect(t.toCommit()).toBe(1001);
  });

  it('offers an offset once: after committedUpTo it has nothing new until more finishes', () => {
    const t = tracker(0, 1, 2);
    t.finish(0);
    t.committedUpTo(t.toCommit()!);
    expect(t.toCommit()).toBeUndefined();
    t.finish(2);
    expect(t.toCommit()).toBeUndefined();
    t.finish(1);
    expect(t.toCommit()).toBe(3);
  });

  it('allows a commit up to the first unfinished offset, and refuses one past it', () => {
    const t = tracker(0, 1, 2, 3);
    t.finish(0);
    t.finish(2);
    t.finish(3);
    expect(() => t.committedUpTo(1)).not.toThrow();
    expect(() => t.committedUpTo(2)).toThrow('commit tracker of disputes/0: committed 2 past unfinished offset 1');
    expect(() => t.committedUpTo(4)).toThrow(/past unfinished offset 1/);
  });

  it('refuses a commit past an unfinished offset that follows a gap', () => {
    const t = tracker(0, 7);
    t.finish(0);
    expect(() => t.committedUpTo(1)).not.toThrow();
    expect(() => t.committedUpTo(8)).toThrow(/committed 8 past unfinished offset 7/);
  });

  it('throws when an offset finishes twice, before or after the prefix passed it', () => {
    const t = tracker(0, 1, 2);
    t.finish(2);
    expect(() => t.finish(2)).toThrow('commit tracker of disputes/0: offset 2 finished twice or never received');
    t.finish(0);
    expect(() => t.finish(0)).toThrow(/offset 0 finished twice or never received/);
    expect(t.toCommit()).toBe(1);
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
        if (i > 0) expect(t.toCommit()).toBe(block === 0 ? undefined : block * 20 - 1);
      }
      expect(t.toCommit()).toBe((block + 1) * 20 - 1);
    }
    expect(t.inProgress).toBe(0);
    expect(() => t.received(n * 2 - 2)).toThrow(/received after/);
    t.received(n * 2);
    expect(() => t.committedUpTo(n * 2 + 1)).toThrow(/past unfinished offset 10000/);
  });
});
