/**
 * The finished offsets above a committed one, as orderly writes them in the commit's metadata (a
 * string Kafka keeps with each committed offset), so that a restarted worker, or a partition's
 * next owner, skips them instead of running them again (as Parallel Consumer does).
 *
 * The text is `o1:<offset>:<kind><payload>`: the format's version (1), the committed offset it
 * belongs to (a reader checks it against the offset it read back), and the offsets in one of two
 * encodings, whichever is shorter, in base64:
 * - `r`, run lengths: unsigned LEB128 numbers, alternately offsets not finished and offsets
 *   finished, from the committed offset on (`10:` then 2, 3, 5, 1 lists 12–14 and 20);
 * - `b`, a bitset: bit i (least significant first in each byte) is the committed offset + i.
 * Offsets that hold no record (compacted away, transaction markers) may be listed either way: the
 * log never delivers them.
 */

/** The version of the format this orderly writes and reads. */
export const OFFSET_METADATA_VERSION = 1;

/** A broker's `offset.metadata.max.bytes` by default: a commit with longer metadata is refused. */
export const OFFSET_METADATA_MAX_BYTES = 4096;

/**
 * The longest metadata the engine writes by default: the broker's default less one byte, as
 * @confluentinc/kafka-javascript sends the string with a NUL byte after it, which the broker counts.
 */
export const COMMIT_METADATA_MAX_BYTES = OFFSET_METADATA_MAX_BYTES - 1;

/** Offsets from `start` up to, not including, `end`. */
export interface OffsetRange {
  readonly start: number;
  readonly end: number;
}

/** What a reader made of a commit's metadata: the finished offsets it lists, or why it ignored it. */
export type OffsetMetadataReading =
  { readonly ranges: readonly OffsetRange[]; readonly ignored?: undefined } | { readonly ranges: readonly []; readonly ignored: string };

const PREFIX = `o${OFFSET_METADATA_VERSION}:`;

/**
 * The metadata of a commit at `committed` listing `ranges` (ascending, disjoint, above
 * `committed`), at most `maxBytes` long: past it, the list is cut at the highest offset that fits
 * (the offsets left out are redelivered, as without metadata). Empty when nothing is listed.
 */
export function writeOffsetMetadata(committed: number, ranges: readonly OffsetRange[], maxBytes: number = COMMIT_METADATA_MAX_BYTES): string {
  if (ranges.length === 0) return '';
  checkRanges(committed, ranges);
  const head = `${PREFIX}${committed}:`;
  // One character for the kind, then base64: 4 characters for every 3 bytes, padded.
  const budget = Math.floor((maxBytes - head.length - 1) / 4) * 3;
  if (budget <= 0) return '';
  const runs = runLengths(committed, ranges, budget);
  const bits = bitset(committed, ranges, budget);
  // The one that lists more; of two that list as much, the shorter.
  const best = runs.upTo > bits.upTo || (runs.upTo === bits.upTo && runs.bytes.length <= bits.bytes.length) ? runs : bits;
  if (best.bytes.length === 0) return '';
  return `${head}${best.kind}${Buffer.from(best.bytes).toString('base64')}`;
}

/**
 * Reads the metadata of a commit at `committed` (undefined: nothing committed). Metadata that is
 * not orderly's, of another version, of another offset or damaged is ignored, with the reason:
 * its offsets are then delivered and run again, as they would be without metadata.
 */
export function readOffsetMetadata(committed: number | undefined, metadata: string | undefined): OffsetMetadataReading {
  if (!metadata) return { ranges: [] };
  const version = /^o(\d+):/.exec(metadata)?.[1];
  if (version === undefined) return ignored(`it is not orderly's (${preview(metadata)}): another consumer of this group wrote it`);
  if (Number(version) !== OFFSET_METADATA_VERSION)
    return ignored(`it is in version ${version} of orderly's format, and this orderly reads version ${OFFSET_METADATA_VERSION} (a newer orderly wrote it)`);
  const parts = /^o\d+:(\d+):([rb])([A-Za-z0-9+/]*={0,2})$/.exec(metadata);
  if (!parts) return ignored(`it is damaged (${preview(metadata)})`);
  const base = Number(parts[1]);
  if (base !== committed) return ignored(`it belongs to offset ${base}, and the committed offset is ${committed ?? 'none'}`);
  const bytes = Buffer.from(parts[3]!, 'base64');
  const ranges = parts[2] === 'r' ? fromRunLengths(base, bytes) : fromBitset(base, bytes);
  return ranges ? { ranges } : ignored(`its ${parts[2] === 'r' ? 'run lengths are' : 'bitset is'} damaged (${preview(metadata)})`);
}

/** How many offsets the ranges cover. */
export function offsetsIn(ranges: readonly OffsetRange[]): number {
  let n = 0;
  for (const r of ranges) n += r.end - r.start;
  return n;
}

interface Encoded {
  readonly kind: 'r' | 'b';
  readonly bytes: number[];
  /** The offset after the last one listed. */
  readonly upTo: number;
}

function runLengths(committed: number, ranges: readonly OffsetRange[], budget: number): Encoded {
  const bytes: number[] = [];
  let cursor = committed;
  for (const r of ranges) {
    const pair = [...varint(r.start - cursor), ...varint(r.end - r.start)];
    if (bytes.length + pair.length > budget) break;
    bytes.push(...pair);
    cursor = r.end;
  }
  return { kind: 'r', bytes, upTo: cursor };
}

function bitset(committed: number, ranges: readonly OffsetRange[], budget: number): Encoded {
  const span = Math.min(ranges[ranges.length - 1]!.end - committed, budget * 8);
  const bytes: number[] = new Array<number>(Math.ceil(span / 8)).fill(0);
  let upTo = committed;
  for (const r of ranges) {
    for (let o = r.start; o < r.end && o - committed < span; o++) {
      const i = o - committed;
      bytes[i >> 3]! |= 1 << (i & 7);
      upTo = o + 1;
    }
  }
  bytes.length = Math.ceil((upTo - committed) / 8);
  return { kind: 'b', bytes, upTo };
}

function fromRunLengths(base: number, bytes: Uint8Array): OffsetRange[] | undefined {
  const numbers = readVarints(bytes);
  if (!numbers || numbers.length % 2 !== 0) return undefined;
  const ranges: OffsetRange[] = [];
  let cursor = base;
  for (let i = 0; i < numbers.length; i += 2) {
    // Every gap and run is at least 1: the committed offset itself is never finished (the commit would have passed it).
    if (numbers[i]! < 1 || numbers[i + 1]! < 1) return undefined;
    const start = cursor + numbers[i]!;
    cursor = start + numbers[i + 1]!;
    if (!Number.isSafeInteger(cursor)) return undefined;
    ranges.push({ start, end: cursor });
  }
  return ranges;
}

function fromBitset(base: number, bytes: Uint8Array): OffsetRange[] | undefined {
  // The committed offset itself is never finished.
  if (bytes.length === 0 || (bytes[0]! & 1) !== 0) return undefined;
  const ranges: OffsetRange[] = [];
  let start: number | undefined;
  for (let i = 0; i < bytes.length * 8; i++) {
    const set = (bytes[i >> 3]! & (1 << (i & 7))) !== 0;
    if (set) start ??= base + i;
    else if (start !== undefined) {
      ranges.push({ start, end: base + i });
      start = undefined;
    }
  }
  if (start !== undefined) ranges.push({ start, end: base + bytes.length * 8 });
  return ranges;
}

/** Unsigned LEB128; by arithmetic, not bit operators, so that numbers past 2^31 stay whole. */
function varint(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return out;
}

function readVarints(bytes: Uint8Array): number[] | undefined {
  const numbers: number[] = [];
  let value = 0;
  let scale = 1;
  for (const byte of bytes) {
    value += (byte & 0x7f) * scale;
    if (!Number.isSafeInteger(value)) return undefined;
    if (byte & 0x80) scale *= 0x80;
    else {
      numbers.push(value);
      value = 0;
      scale = 1;
    }
  }
  // A number cut short: its last byte said more would follow.
  return scale === 1 ? numbers : undefined;
}

/** Each range above the committed offset and the one before it, with at least one offset between: the commit itself never passes a finished one. */
function checkRanges(committed: number, ranges: readonly OffsetRange[]): void {
  let after = committed;
  for (const r of ranges) {
    if (!(r.start > after && r.end > r.start))
      throw new Error(
        `offset metadata of a commit at ${committed}: range ${r.start}–${r.end} is not above ${after} and non-empty; the ranges must ascend, apart, above the committed offset`,
      );
    after = r.end;
  }
}

function ignored(reason: string): OffsetMetadataReading {
  return { ranges: [], ignored: reason };
}

function preview(metadata: string): string {
  return JSON.stringify(metadata.length > 40 ? `${metadata.slice(0, 40)}…` : metadata);
}
