import { partitionId, type OutRecord, type TopicPartition } from '../../ports/log.js';
import type { StoreOp } from '../../ports/store.js';
import { stateKeys } from '../../state/stateKeys.js';
import { markedFromJson } from '../../state/storedFormat.js';
import { changelogRecordOf, jsonRecord, type EncodedWrite } from './changelogWrite.js';

// Stored format 4: a table row's changelog record carries, after its JSON, the effect records (in
// the effect ring) of the events that wrote the row and are not committed yet. An event then
// costs one changelog record instead of two (its row and its effect record), and a restore reads
// half as many. Compaction keeps only a row's last record, so that record carries every effect
// record the row's earlier records carried that a redelivery can still need: those at or past
// the committed offset that no later write of their ring position replaced. (Format 3 carried
// them in this header; it is read, no longer written.)

/** The changelog header in which a table row's record carried effect records at stored format 3. */
export const CARRIED_EFFECTS_HEADER = 'orderly-effects';

/**
 * Effect records one row's changelog record carries at most. A row that would carry more (written
 * by many events within one commit interval: a hot key) writes those it carries as records of
 * their own, and its events' records go as records of their own, as in format 2, until the
 * committed offset passes the event that filled it: a record's size stays bounded, and a hot row
 * does not write each of its events' records again and again.
 */
export const MAX_CARRIED_PER_ROW = 4;

/** The bytes of effect-record JSON one row's record carries at most (outputs make records large): past it, as past {@link MAX_CARRIED_PER_ROW}. */
export const MAX_CARRIED_BYTES = 64 * 1024;

/** An effect record that a row's changelog record carries. */
export interface CarriedEffect {
  /** Its state key (in the effect ring of the row's store and partition). */
  readonly ringKey: string;
  /** The offset of its event. */
  readonly offset: number;
  /** The record's JSON, as its own changelog record's value would hold it. */
  readonly json: string;
  /** Its line in the row's record (`<position> <offset> <json>`), made when first needed. */
  line?: string;
}

/** The lines of carried effect records: `<position> <offset> <json>` each (JSON has no raw newline). */
export function encodeCarried(effects: readonly CarriedEffect[]): string {
  let text = '';
  for (const effect of effects) {
    if (text.length > 0) text += '\n';
    // A row carries a record in each of its records until it is dropped: its line is made once.
    text += effect.line ??= `${positionOf(effect.ringKey)} ${effect.offset} ${effect.json}`;
  }
  return text;
}

/**
 * The effect records a row's changelog record carries (`text`, their lines), those of events below
 * `from` left out (a restore needs none of them); an error naming the row if the lines are not orderly's.
 */
export function decodeCarried(rowKey: string, text: string, from = 0): CarriedEffect[] {
  const effects: CarriedEffect[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const a = text.indexOf(' ', start);
    const b = a < 0 ? -1 : text.indexOf(' ', a + 1);
    const position = Number(text.slice(start, a));
    const offset = Number(text.slice(a + 1, b));
    if (a <= start || b < 0 || b > end || !Number.isInteger(position) || position < 0 || !Number.isInteger(offset) || offset < 0) {
      throw new Error(`changelog record '${rowKey}': the effect records it carries are not '<position> <offset> <json>' lines; it was not written by orderly`);
    }
    if (offset >= from) effects.push({ ringKey: stateKeys.ringBesideRow(rowKey, position), offset, json: text.slice(b + 1, end) });
    start = end + 1;
  }
  return effects;
}

/** The puts of the effect records a changelog record carries (`text`, their lines; formats 3 and 4); none for a record that carries nothing. */
export function carriedPuts(rowKey: string, text: string | undefined): StoreOp[] {
  if (text === undefined) return [];
  return decodeCarried(rowKey, text).map((e) => ({ type: 'put', key: e.ringKey, value: JSON.parse(e.json) as unknown }));
}

/** A row's carried records (never empty), and its partition's. */
interface RowCarried {
  effects: CarriedEffect[];
  readonly partition: PartitionCarried;
}

/** A partition's carried effect records in the order they were carried, to drop those the committed offset passed. */
interface PartitionCarried {
  committed: number | undefined;
  readonly queue: Array<{ readonly ringKey: string; readonly offset: number }>;
  head: number;
  /** Rows that filled up, each with the offset of the event that filled it: they carry nothing new until the committed offset passes it. */
  readonly full: Map<string, number>;
}

/**
 * Which effect records each table row's last changelog record carries, and which of them the
 * row's next record must carry again: a record is dropped once the committed offset passes its
 * event (it is never read again), once its ring position is written again (a later event's
 * record took it), or once it is written as a record of its own (the row is deleted: a tombstone
 * carries nothing; the partition is handed back). Held per partition, for the partitions this
 * worker writes; a partition taken over starts from what its restore read.
 */
export class CarriedEffects {
  /**
   * @param format - the stored format the worker writes: 4, effect records ride with their rows;
   * 2, none does from now on, and the records that rows' last records carry (read by a restore)
   * go as records of their own before the row's next record, which carries nothing.
   */
  constructor(private readonly format: 2 | 4 = 4) {}

  /** Each row's carried records and its partition, by row key; a row with none has no entry. */
  private readonly rows = new Map<string, RowCarried>();
  /** The row that carries each ring key. */
  private readonly carrierOf = new Map<string, string>();
  private readonly partitions = new Map<string, PartitionCarried>();

  /** The events of the partition below `offset` are committed: their records are not carried again. */
  committed(tp: TopicPartition, offset: number): void {
    const partition = this.partition(partitionId(tp));
    partition.committed = Math.max(partition.committed ?? offset, offset);
    const queue = partition.queue;
    while (partition.head < queue.length && queue[partition.head]!.offset < offset) {
      const { ringKey, offset: carried } = queue[partition.head++]!;
      const row = this.carrierOf.get(ringKey);
      if (row !== undefined) this.remove(row, ringKey, carried);
    }
    if (partition.head > 1_024 && partition.head * 2 > queue.length) {
      queue.splice(0, partition.head);
      partition.head = 0;
    }
    for (const [row, filledAt] of partition.full) if (filledAt < offset) partition.full.delete(row);
  }

  /** Forgets the partition (it was taken away, or is restored anew). */
  dropPartition(tp: TopicPartition): void {
    const id = partitionId(tp);
    const partition = this.partitions.get(id);
    this.partitions.delete(id);
    if (!partition) return;
    for (let i = partition.head; i < partition.queue.length; i++) {
      const { ringKey } = partition.queue[i]!;
      const row = this.carrierOf.get(ringKey);
      if (row === undefined) continue;
      this.carrierOf.delete(ringKey);
      this.rows.delete(row);
    }
  }

  /**
   * The partition's carried records that a redelivery may still need (the committed offset passed
   * none of them), each with its row, taken out: the partition is handed back, and its checkpoint
   * keeps them, so that a restore from it knows what the rows' last records carry.
   */
  takePartition(tp: TopicPartition): Array<readonly [rowKey: string, ringKey: string, offset: number]> {
    const id = partitionId(tp);
    const partition = this.partitions.get(id);
    const taken: Array<readonly [string, string, number]> = [];
    if (partition) {
      for (let i = partition.head; i < partition.queue.length; i++) {
        const row = this.carrierOf.get(partition.queue[i]!.ringKey);
        if (row !== undefined) for (const effect of this.release(row)) taken.push([row, effect.ringKey, effect.offset]);
      }
    }
    this.partitions.delete(id);
    return taken;
  }

  /**
   * The records of one staged batch, given each op encoded (in order): each ring put rides with the
   * table put just before it in the batch (its event's row: an event's ops are contiguous), if that
   * is of the same store and partition and the row is not full; each table put carries its row's
   * records; a table delete, or a row that fills up, is preceded by its row's records as records of
   * their own. Every other write goes as its own record.
   */
  records(ops: readonly StoreOp[], writes: readonly EncodedWrite[]): readonly OutRecord[] {
    const format = this.format;
    // Which ring put may ride with which table put: by row index, the ring put's index.
    let riderOf: Int32Array | undefined;
    const kinds = new Uint8Array(ops.length);
    for (let i = 0; i < ops.length; i++) kinds[i] = kindOf(ops[i]!.key);
    if (format === 4) {
      let free = -1;
      for (let i = 0; i < ops.length; i++) {
        const op = ops[i]!;
        if (op.type !== 'put') continue;
        const kind = kinds[i];
        if (kind === TABLE) free = i;
        else if (kind === RING && free >= 0 && sameScope(ops[free]!.key, op.key)) {
          (riderOf ??= new Int32Array(ops.length).fill(-1))[free] = i;
          free = -1;
        }
      }
    }
    if (riderOf === undefined && this.rows.size === 0) return writes.map((write) => changelogRecordOf(write, format));
    /** Ring puts that rode with their rows: no record of their own. */
    const rode = riderOf && new Uint8Array(ops.length);
    const out: OutRecord[] = [];
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      const write = writes[i]!;
      const kind = kinds[i];
      if (kind === RING && op.type === 'put') {
        if (rode?.[i]) continue;
        this.supersede(op.key);
      } else if (kind === TABLE && op.type === 'put') {
        const j = riderOf?.[i] ?? -1;
        if (format === 2) {
          // Format 2: what a restore found the row carrying goes as records of their own.
          for (const effect of this.release(op.key)) out.push(this.ownRecord(write, effect));
        } else if (j >= 0 && this.ride(op.key, ops[j]!, writes[j]!.json, write, out)) {
          rode![j] = 1;
        }
        const carried = this.live(op.key);
        if (carried.length > 0) {
          if (write.json !== undefined) {
            const value = Buffer.from(`${markedFromJson(write.json)}\n${encodeCarried(carried)}`);
            out.push({ topic: write.topic, partition: write.partition, key: write.key, value });
            continue;
          }
          // A value without JSON cannot carry lines after it.
          for (const effect of this.release(op.key)) out.push(this.ownRecord(write, effect));
        }
      } else if (kind === TABLE) {
        for (const effect of this.release(op.key)) out.push(this.ownRecord(write, effect));
      }
      out.push(changelogRecordOf(write, format));
    }
    return out;
  }

  /**
   * Lets a ring put ride with its row's record; false if it cannot (no offset or JSON, the row is
   * full, or it would fill it: then what the row carries goes to `out` as records of their own).
   */
  private ride(rowKey: string, put: StoreOp, json: string | undefined, row: EncodedWrite, out: OutRecord[]): boolean {
    const offset = put.type === 'put' ? (put.value as { offset?: unknown } | null)?.offset : undefined;
    if (typeof offset !== 'number' || json === undefined) return false;
    const partition = this.rows.get(rowKey)?.partition ?? this.partition(partitionOfKey(rowKey));
    if (partition.full.size > 0 && partition.full.has(rowKey)) return false;
    const carried = this.live(rowKey);
    let bytes = json.length;
    for (const effect of carried) bytes += effect.json.length;
    if (carried.length >= MAX_CARRIED_PER_ROW || bytes > MAX_CARRIED_BYTES) {
      partition.full.set(rowKey, offset);
      for (const effect of this.release(rowKey)) out.push(this.ownRecord(row, effect));
      return false;
    }
    this.carry(rowKey, { ringKey: put.key, offset, json });
    return true;
  }

  /**
   * A restore read the last record of `rowKey` so far: it carries `effects` (those a redelivery
   * may need: at or past the committed offset), or nothing (none, or a tombstone).
   */
  restoredRow(rowKey: string, effects: readonly CarriedEffect[]): void {
    const before = this.rows.get(rowKey)?.effects;
    if (before) for (const effect of before) this.carrierOf.delete(effect.ringKey);
    this.rows.delete(rowKey);
    for (const effect of effects) {
      // A row's every record carries its records again: queued once, not per record read.
      const known = before?.some((e) => e.ringKey === effect.ringKey && e.offset === effect.offset) ?? false;
      this.carry(rowKey, effect, !known);
    }
  }

  /** The ring position `ringKey` is written (a record of its own): no row carries its earlier record from now on. */
  supersede(ringKey: string): void {
    const row = this.carrierOf.get(ringKey);
    if (row !== undefined) this.remove(row, ringKey, undefined);
  }

  /** The row's carried records that a redelivery may still need (the committed offset passed none of them). */
  private live(rowKey: string): readonly CarriedEffect[] {
    const row = this.rows.get(rowKey);
    if (row === undefined) return NONE;
    const committed = row.partition.committed;
    if (committed === undefined) return row.effects;
    let stale = false;
    for (const effect of row.effects) if (effect.offset < committed) stale = true;
    if (!stale) return row.effects;
    for (const effect of row.effects) if (effect.offset < committed) this.remove(rowKey, effect.ringKey, effect.offset);
    return this.rows.get(rowKey)?.effects ?? NONE;
  }

  private carry(rowKey: string, effect: CarriedEffect, queue = true): void {
    if (this.carrierOf.size > 0) this.supersede(effect.ringKey);
    let row = this.rows.get(rowKey);
    if (row) row.effects.push(effect);
    else this.rows.set(rowKey, (row = { effects: [effect], partition: this.partition(partitionOfKey(rowKey)) }));
    this.carrierOf.set(effect.ringKey, rowKey);
    if (queue) row.partition.queue.push({ ringKey: effect.ringKey, offset: effect.offset });
  }

  /** Takes the row's carried records out (they become records of their own). */
  private release(rowKey: string): readonly CarriedEffect[] {
    const carried = this.live(rowKey);
    for (const effect of carried) this.carrierOf.delete(effect.ringKey);
    this.rows.delete(rowKey);
    return carried;
  }

  /** Drops the row's record of `ringKey` (of that offset, if given). */
  private remove(rowKey: string, ringKey: string, offset: number | undefined): void {
    const row = this.rows.get(rowKey);
    if (!row) return;
    const only = row.effects.length === 1 ? row.effects[0]! : undefined;
    if (only !== undefined) {
      // The usual case, without a new array.
      if (only.ringKey !== ringKey || (offset !== undefined && only.offset !== offset)) return;
      this.carrierOf.delete(ringKey);
      this.rows.delete(rowKey);
      return;
    }
    const kept = row.effects.filter((e) => e.ringKey !== ringKey || (offset !== undefined && e.offset !== offset));
    if (kept.length === row.effects.length) return;
    this.carrierOf.delete(ringKey);
    if (kept.length === 0) this.rows.delete(rowKey);
    else row.effects = kept;
  }

  /** An effect record that was carried, as a record of its own beside its row's record, in the format written. */
  private ownRecord(row: EncodedWrite, effect: CarriedEffect): OutRecord {
    return jsonRecord(row.topic, row.partition, effect.ringKey, effect.json, this.format);
  }

  private partition(id: string): PartitionCarried {
    let partition = this.partitions.get(id);
    if (!partition) this.partitions.set(id, (partition = { committed: undefined, queue: [], head: 0, full: new Map() }));
    return partition;
  }
}

const NONE: readonly CarriedEffect[] = Object.freeze([]);
const TABLE = 1;
const RING = 2;

/** TABLE or RING for keys of those kinds, else 0: read from the key's first characters, per op (stateKeys' kinds: only `table` starts with t, `ring` and `run` with r). */
function kindOf(key: string): number {
  const first = key.charCodeAt(0);
  if (first === 0x74 /* t */) return key.startsWith('table/') ? TABLE : 0;
  if (first === 0x72 /* r */ && key.charCodeAt(1) === 0x69 /* i */) return key.startsWith('ring/') ? RING : 0;
  return 0;
}

/** Whether a row key (`table/…`) and a ring key (`ring/…`) have the same `/<store>/<topic>/<partition>/`, compared in place. */
function sameScope(rowKey: string, ringKey: string): boolean {
  // 'table' is one character longer than 'ring'.
  let slashes = 0;
  for (let i = 5; i < rowKey.length; i++) {
    const c = rowKey.charCodeAt(i);
    if (c !== ringKey.charCodeAt(i - 1)) return false;
    if (c === 0x2f /* / */ && ++slashes === 4) return true;
  }
  return false;
}

/** The partition id (`<topic>/<partition>`, as `partitionId`) of a key: Kafka's topic names need no encoding. */
function partitionOfKey(key: string): string {
  const b = nthSlash(key, 0, 2);
  const d = nthSlash(key, b, 2);
  const id = key.slice(b + 1, d);
  return id.includes('%') ? decodeURIComponent(id) : id;
}

/** The index of the `n`th '/' after index `from`. */
function nthSlash(key: string, from: number, n: number): number {
  let at = from;
  for (let i = 0; i < n; i++) at = key.indexOf('/', at + 1);
  return at;
}

/** The position a ring key ends with, read digit by digit (no substring). */
function positionOf(ringKey: string): number {
  let position = 0;
  let scale = 1;
  for (let i = ringKey.length - 1; i >= 0; i--) {
    const digit = ringKey.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) break;
    position += digit * scale;
    scale *= 10;
  }
  return position;
}
