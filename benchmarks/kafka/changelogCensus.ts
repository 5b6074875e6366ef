import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CARRIED_EFFECTS_HEADER } from '../../src/kafka/changelog/carriedEffects.js';

/**
 * What a consumer group's changelog topics hold on a broker's disk, read from the partitions'
 * segment files (record batch format v2) in the broker's log directory: records and tombstones by
 * kind of state key (the key's first segment: ring, effect, table, horizon, attempts, ...), and where
 * they lie: below the cleaner's checkpoint (cleaned), in rolled segments above it (dirty: waiting
 * for the cleaner), or in the active segment (never cleaned: it rolls at its first write after
 * `segment.ms`). Read while the broker runs: a segment swapped meanwhile is skipped, a batch cut
 * short at the end of the active segment ends its file.
 */

/** Records (tombstones among them) and their bytes in the log (each record's own bytes, without its batch's header). */
export interface Counts {
  records: number;
  tombstones: number;
  bytes: number;
  /** Effect records these records carry (a table row's: after its JSON at stored format 4, in its header `orderly-effects` at 3). */
  carried: number;
}

/** Where a record lies in its partition. */
export type Section = 'cleaned' | 'dirty' | 'active';

export interface ChangelogCensus {
  /** Changelog partitions read (folders `<group>-<store>-changelog-<p>`). */
  readonly partitions: number;
  /** Segment files (`.log`) read. */
  readonly segments: number;
  /** Every data record, by section. */
  readonly sections: Readonly<Record<Section, Counts>>;
  /** Every data record, by kind of state key (`ring`, `effect`, `table`, `horizon`, `attempts`, ...). */
  readonly kinds: Readonly<Record<string, Counts>>;
  /** Kind × section, as `<kind>/<section>`. */
  readonly kindSections: Readonly<Record<string, Counts>>;
  /** Record batches, and the bytes of their headers (61 each); control batches (transaction markers) among them. */
  readonly batches: { readonly count: number; readonly control: number; readonly headerBytes: number };
  /** Files by suffix (`log`, `index`, `timeindex`, `deleted`: cleaned segments waiting for `file.delete.delay.ms`, ...): allocated MiB. */
  readonly filesMb: Readonly<Record<string, number>>;
}

/** A changelog partition's folder and what the cleaner says of it. */
export interface ChangelogPartition {
  readonly dir: string;
  /** `<topic>-<partition>`, the folder's name. */
  readonly name: string;
  /** Segments by base offset, ascending; the last is the active one. */
  readonly segments: ReadonlyArray<{ readonly base: number; readonly bytes: number }>;
  /** The cleaner's checkpoint: the first offset it has not cleaned; 0 when it never cleaned the partition. */
  readonly cleanedTo: number;
  /** Files the cleaner has not finished with: cleaned-away segments waiting for deletion, segments being swapped in. */
  readonly pendingFiles: number;
}

/** The changelog partitions of a consumer group in a broker's log directory, with the cleaner's checkpoints. */
export async function changelogPartitions(dataDir: string, group: string): Promise<ChangelogPartition[]> {
  const checkpoints = await cleanerCheckpoints(dataDir);
  const pattern = /-changelog-\d+$/;
  const found: ChangelogPartition[] = [];
  for (const entry of await readdir(dataDir, { withFileTypes: true })) {
    if (!entry.isDirectory() || !entry.name.startsWith(`${group}-`) || !pattern.test(entry.name)) continue;
    const dir = join(dataDir, entry.name);
    let files: string[];
    try {
      files = await readdir(dir);
    } catch {
      continue;
    }
    const segments: Array<{ base: number; bytes: number }> = [];
    for (const file of files) {
      if (!/^\d{20}\.log$/.test(file)) continue;
      try {
        segments.push({ base: Number(file.slice(0, 20)), bytes: (await stat(join(dir, file))).size });
      } catch {
        // Swapped meanwhile.
      }
    }
    segments.sort((a, b) => a.base - b.base);
    const pendingFiles = files.filter((f) => /\.(deleted|cleaned|swap)$/.test(f)).length;
    found.push({ dir, name: entry.name, segments, cleanedTo: checkpoints.get(entry.name) ?? 0, pendingFiles });
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * True when the cleaner has nothing left to do for these partitions: none has a file it is
 * finishing with, and each has every rolled segment cleaned, or too little of it dirty for the
 * cleaner to pick it (`minCleanableRatio`, the topics' `min.cleanable.dirty.ratio`).
 */
export function cleanerCaughtUp(partitions: readonly ChangelogPartition[], minCleanableRatio: number): boolean {
  return partitions.every((p) => {
    if (p.pendingFiles > 0) return false;
    const rolled = p.segments.slice(0, -1);
    const active = p.segments.at(-1);
    if (!active || rolled.length === 0 || p.cleanedTo >= active.base) return true;
    // The cleaner's own measure: dirty bytes (rolled segments from its checkpoint on) over all rolled bytes.
    let dirty = 0;
    let total = 0;
    for (let i = 0; i < rolled.length; i++) {
      const next = p.segments[i + 1]!.base;
      total += rolled[i]!.bytes;
      if (next > p.cleanedTo) dirty += rolled[i]!.bytes;
    }
    return total === 0 || dirty / total <= minCleanableRatio;
  });
}

/** Reads every segment of the group's changelog partitions and counts what they hold. */
export async function changelogCensus(dataDir: string, group: string): Promise<ChangelogCensus> {
  const partitions = await changelogPartitions(dataDir, group);
  const sections: Record<Section, Counts> = { cleaned: zero(), dirty: zero(), active: zero() };
  const kinds: Record<string, Counts> = {};
  const kindSections: Record<string, Counts> = {};
  const batches = { count: 0, control: 0, headerBytes: 0 };
  const filesBytes: Record<string, number> = {};
  let segments = 0;
  for (const p of partitions) {
    for (const file of await readdir(p.dir).catch(() => [] as string[])) {
      const suffix = file.endsWith('.deleted') ? 'deleted' : (file.split('.').pop() ?? '');
      try {
        filesBytes[suffix] = (filesBytes[suffix] ?? 0) + (await stat(join(p.dir, file))).blocks * 512;
      } catch {
        // Gone meanwhile.
      }
    }
    const active = p.segments.at(-1)?.base;
    for (const segment of p.segments) {
      let data: Buffer;
      try {
        data = await readFile(join(p.dir, `${String(segment.base).padStart(20, '0')}.log`));
      } catch {
        continue;
      }
      segments += 1;
      for (const batch of recordBatches(data)) {
        batches.count += 1;
        batches.headerBytes += BATCH_HEADER;
        if (batch.control) {
          batches.control += 1;
          continue;
        }
        for (const record of batch.records) {
          const section: Section = segment.base === active ? 'active' : record.offset < p.cleanedTo ? 'cleaned' : 'dirty';
          const kind = record.kind;
          for (const counts of [sections[section], (kinds[kind] ??= zero()), (kindSections[`${kind}/${section}`] ??= zero())]) {
            counts.records += 1;
            counts.bytes += record.bytes;
            if (record.tombstone) counts.tombstones += 1;
            counts.carried += record.carried;
          }
        }
      }
    }
  }
  const filesMb = Object.fromEntries(Object.entries(filesBytes).map(([suffix, bytes]) => [suffix, mib(bytes)]));
  return { partitions: partitions.length, segments, sections, kinds, kindSections, batches, filesMb };
}

const zero = (): Counts => ({ records: 0, tombstones: 0, bytes: 0, carried: 0 });
const mib = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;

/** The cleaner's checkpoints (`cleaner-offset-checkpoint`: a version line, a count, then `topic partition offset` lines), by folder name. */
async function cleanerCheckpoints(dataDir: string): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  let text: string;
  try {
    text = await readFile(join(dataDir, 'cleaner-offset-checkpoint'), 'utf8');
  } catch {
    return found;
  }
  for (const line of text.split('\n').slice(2)) {
    const [topic, partition, offset] = line.trim().split(' ');
    if (topic && partition && offset) found.set(`${topic}-${partition}`, Number(offset));
  }
  return found;
}

/** Bytes of a v2 record batch before its records: base offset (8) and length (4), then 49 more. */
const BATCH_HEADER = 61;

interface ParsedRecord {
  readonly offset: number;
  /** The state key's kind (its text up to the first '/'), or `(no key)`. */
  readonly kind: string;
  readonly tombstone: boolean;
  readonly bytes: number;
  /** Effect records it carries (one line each, in its value or its header `orderly-effects`). */
  readonly carried: number;
}

interface ParsedBatch {
  readonly control: boolean;
  readonly records: ParsedRecord[];
}

/** The record batches of a segment file, in order; stops at a batch cut short (the end of an active segment). */
export function* recordBatches(data: Buffer): Generator<ParsedBatch> {
  let at = 0;
  while (at + BATCH_HEADER <= data.length) {
    const baseOffset = Number(data.readBigInt64BE(at));
    const length = data.readInt32BE(at + 8);
    const end = at + 12 + length;
    if (length <= 0 || end > data.length) return;
    const magic = data.readInt8(at + 16);
    if (magic !== 2) throw new Error(`changelog census: a record batch of magic ${magic} at byte ${at}; only v2 is read`);
    const attributes = data.readInt16BE(at + 21);
    if ((attributes & 0x7) !== 0) throw new Error(`changelog census: a compressed record batch at byte ${at}; orderly's producer does not compress`);
    const control = (attributes & 0x20) !== 0;
    const count = data.readInt32BE(at + 57);
    const records: ParsedRecord[] = [];
    let pos = at + BATCH_HEADER;
    for (let i = 0; i < count && pos < end; i++) {
      const start = pos;
      const [size, afterSize] = varint(data, pos);
      pos = afterSize;
      const recordEnd = pos + size;
      pos += 1; // attributes
      pos = varint(data, pos)[1]; // timestamp delta
      const [offsetDelta, afterOffset] = varint(data, pos);
      pos = afterOffset;
      const [keyLength, afterKeyLength] = varint(data, pos);
      pos = afterKeyLength;
      let kind = '(no key)';
      if (keyLength >= 0) {
        const key = data.toString('utf8', pos, pos + Math.min(keyLength, 16));
        const slash = key.indexOf('/');
        kind = slash > 0 ? key.slice(0, slash) : '(other)';
        pos += keyLength;
      }
      const [valueLength, afterValueLength] = varint(data, pos);
      pos = afterValueLength + Math.max(0, valueLength);
      let carried = 0;
      // Format 4: a value that starts with its version (`v4:`) carries one effect record per line after its JSON.
      if (valueLength > 0 && data[afterValueLength] === 0x76 /* v */) for (let b = afterValueLength; b < pos; b++) if (data[b] === 0x0a) carried += 1;
      const [headerCount, afterHeaderCount] = varint(data, pos);
      pos = afterHeaderCount;
      for (let h = 0; h < headerCount && pos < recordEnd; h++) {
        const [nameLength, afterName] = varint(data, pos);
        const name = data.toString('utf8', afterName, afterName + nameLength);
        const [headerLength, afterHeaderLength] = varint(data, afterName + nameLength);
        if (name === CARRIED_EFFECTS_HEADER && headerLength > 0) {
          carried = 1;
          for (let b = afterHeaderLength; b < afterHeaderLength + headerLength; b++) if (data[b] === 0x0a) carried += 1;
        }
        pos = afterHeaderLength + Math.max(0, headerLength);
      }
      records.push({ offset: baseOffset + offsetDelta, kind, tombstone: valueLength < 0, bytes: recordEnd - start, carried });
      pos = recordEnd;
    }
    yield { control, records };
    at = end;
  }
}

/** A zigzag varint (as Kafka's records use) at `pos`: its value and the position after it. */
function varint(data: Buffer, pos: number): [number, number] {
  let raw = 0;
  let shift = 0;
  for (;;) {
    const byte = data[pos++]!;
    raw += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) break;
    shift += 7;
  }
  // Zigzag: even values are positive, odd negative.
  return [raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2, pos];
}
