import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { OFFSET_METADATA_MAX_BYTES, readOffsetMetadata, writeOffsetMetadata, type OffsetRange } from '../../../src/engine/offsetMetadata.js';

/** Ranges above `committed` as the tracker makes them: ascending, each non-empty, at least one offset apart. */
const rangesAbove = (committed: number) =>
  fc.array(fc.tuple(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 300 })), { maxLength: 120 }).map((pairs) => {
    const ranges: OffsetRange[] = [];
    let cursor = committed;
    for (const [gap, run] of pairs) {
      ranges.push({ start: cursor + gap, end: cursor + gap + run });
      cursor += gap + run;
    }
    return ranges;
  });

const committedAndRanges = fc.nat({ max: 2 ** 48 }).chain((committed) => fc.tuple(fc.constant(committed), rangesAbove(committed)));

const offsets = (ranges: readonly OffsetRange[]) => ranges.flatMap((r) => Array.from({ length: r.end - r.start }, (_, i) => r.start + i));

describe('commit metadata: the finished offsets above the committed one', () => {
  test.prop([committedAndRanges])('reads back what it wrote when it fits', ([committed, ranges]) => {
    const metadata = writeOffsetMetadata(committed, ranges, 1_000_000);
    expect(readOffsetMetadata(committed, metadata)).toEqual({ ranges });
  });

  test.prop([committedAndRanges, fc.integer({ min: 0, max: OFFSET_METADATA_MAX_BYTES })])(
    'past the limit, stays within it and lists the finished offsets up to the highest one that fits',
    ([committed, ranges], maxBytes) => {
      const metadata = writeOffsetMetadata(committed, ranges, maxBytes);
      expect(metadata.length).toBeLessThanOrEqual(maxBytes);
      const read = readOffsetMetadata(committed, metadata);
      expect(read.ignored).toBeUndefined();
      const listed = offsets(read.ranges);
      const all = offsets(ranges);
      // A prefix of the finished offsets, in order: the ones left out are all above the ones listed.
      expect(listed).toEqual(all.slice(0, listed.length));
    },
  );

  it('cuts a long list at the limit: of 20,000 finished offsets, every other one, it lists those up to 24,527', () => {
    const ranges = Array.from({ length: 20_000 }, (_, i) => ({ start: 2 * i + 1, end: 2 * i + 2 }));
    const metadata = writeOffsetMetadata(0, ranges);
    expect(metadata.length).toBeLessThanOrEqual(4096);
    const listed = offsets(readOffsetMetadata(0, metadata).ranges);
    // A bitset: one bit per offset, 3,066 bytes (24,528 bits) in the 4,090 characters of base64 left after 'o1:0:b'.
    expect(metadata.startsWith('o1:0:b')).toBe(true);
    expect(listed.length).toBe(12_264);
    expect(listed.at(-1)).toBe(24_527);
    expect(listed).toEqual(offsets(ranges).slice(0, listed.length));
  });

  it('writes run lengths where runs are long, a bitset where they are short, and reads both', () => {
    expect(writeOffsetMetadata(100, [{ start: 200, end: 5_000 }])).toBe(`o1:100:r${Buffer.from([100, 0xc0, 0x25]).toString('base64')}`);
    const alternate = Array.from({ length: 50 }, (_, i) => ({ start: 2 * i + 1, end: 2 * i + 2 }));
    expect(writeOffsetMetadata(0, alternate)[5]).toBe('b');
    // 10: 2 not finished, 3 finished, 5 not, 1 finished.
    const ranges = [
      { start: 12, end: 15 },
      { start: 20, end: 21 },
    ];
    expect(readOffsetMetadata(10, `o1:10:r${Buffer.from([2, 3, 5, 1]).toString('base64')}`)).toEqual({ ranges });
    expect(writeOffsetMetadata(10, ranges)).toBe(`o1:10:b${Buffer.from([0b00011100, 0b00000100]).toString('base64')}`);
  });

  it('writes nothing when nothing is finished above, or when no offset fits', () => {
    expect(writeOffsetMetadata(5, [])).toBe('');
    expect(writeOffsetMetadata(5, [{ start: 7, end: 8 }], 8)).toBe('');
  });

  it('refuses ranges that are not above the committed offset, or not apart', () => {
    expect(() => writeOffsetMetadata(5, [{ start: 5, end: 6 }])).toThrow(
      'offset metadata of a commit at 5: range 5–6 is not above 5 and non-empty; the ranges must ascend, apart, above the committed offset',
    );
    expect(() =>
      writeOffsetMetadata(5, [
        { start: 7, end: 9 },
        { start: 9, end: 10 },
      ]),
    ).toThrow(/range 9–10 is not above 9/);
  });

  it('reads no metadata as nothing listed, silently', () => {
    expect(readOffsetMetadata(3, undefined)).toEqual({ ranges: [] });
    expect(readOffsetMetadata(3, '')).toEqual({ ranges: [] });
    expect(readOffsetMetadata(undefined, undefined)).toEqual({ ranges: [] });
  });

  it('ignores, saying why, metadata of another version, of another consumer, of another offset, or damaged', () => {
    const ours = writeOffsetMetadata(10, [{ start: 12, end: 15 }]);
    expect(readOffsetMetadata(10, ours.replace(/^o1:/, 'o2:'))).toEqual({
      ranges: [],
      ignored: "it is in version 2 of orderly's format, and this orderly reads version 1 (a newer orderly wrote it)",
    });
    expect(readOffsetMetadata(10, 'AAEAAAAB')).toEqual({ ranges: [], ignored: `it is not orderly's ("AAEAAAAB"): another consumer of this group wrote it` });
    expect(readOffsetMetadata(11, ours)).toEqual({ ranges: [], ignored: 'it belongs to offset 10, and the committed offset is 11' });
    expect(readOffsetMetadata(undefined, ours).ignored).toBe('it belongs to offset 10, and the committed offset is none');
    expect(readOffsetMetadata(10, 'o1:10:x').ignored).toBe('it is damaged ("o1:10:x")');
    // A number cut short, an odd count, a gap of 0 (the committed offset listed): run lengths that cannot be the tracker's.
    for (const bytes of [[0x83], [2, 3, 5], [0, 3]]) {
      expect(readOffsetMetadata(10, `o1:10:r${Buffer.from(bytes).toString('base64')}`).ignored).toMatch(/^its run lengths are damaged/);
    }
    expect(readOffsetMetadata(10, `o1:10:b${Buffer.from([1]).toString('base64')}`).ignored).toMatch(/^its bitset is damaged/);
  });
});
