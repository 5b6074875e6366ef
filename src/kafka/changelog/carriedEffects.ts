import { partitionId, type OutRecord, type TopicPartition } from '../../ports/log.js';
import type { StoreOp } from '../../ports/store.js';
import { stateKeys } from '../../state/stateKeys.js';
import { BASE_FORMAT_VERSION, FORMAT_HEADER, STORED_FORMAT_VERSION } from '../../state/storedFormat.js';

// Stored format 3: a table row's changelog record carries, in the header `orderly-effects`, the
// effect records (in the effect ring) of the events that wrote the row and are not committed yet.
// An event then costs one changelog record instead of two (its row and its effect record), and a
// restore reads half as many. Compaction keeps only a row's last record, so that record carries
// every effect record the row's earlier records carried that a redelivery can still need: those
// at or past the committed offset that no later write of their ring position replaced.

/** The changelog header in which a table row's record carries effect records (stored format 3). */
export const CARRIED_EFFECTS_HEADER = 'orderly-effects';

/**
 * Effect records one row's changelog record carries at most. Past it (a row written by many
 * events in one commit interval: a hot key), an event's effect record is a record of its own, as
 * in format 2, so that a record's size stays bounded.
 */
export const MAX_CARRIED_PER_ROW = 4;

/** An effect record that a row's changelog record carries. */
export interface CarriedEffect {
  /** Its state key (in the effect ring of the row's store and partition). */
  readonly ringKey: string;
  /** The offset of its event. */
  readonly offset: number;
  /** The record's JSON, as its own changelog record's value would hold it. */
  readonly json: string;
}

/** The header text of carried effect records: one line each, `<position> <offset> <json>` (JSON has no raw newline). */
export function encodeCarried(effects: readonly CarriedEffect[]): string {
  let text = '';
  for (const effect of effects) {
    if (text.length > 0) text += '\n';
    text += `${positionOf(effect.ringKey)} ${effect.offset} ${effect.json}`;
  }
  return text;
}

/**
 * The effect records a row's changelog record carries, those of events below `from` left out (a
 * restore needs none of them); an error naming the row if the header is not orderly's.
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
      throw new Error(
        `changelog record '${rowKey}': its header ${CARRIED_EFFECTS_HEADER} is not a list of '<position> <offset> <json>' lines; it was not written by orderly`,
      );
    }
    if (offset >= from) effects.push({ ringKey: stateKeys.ringBesideRow(rowKey, position), offset, json: text.slice(b + 1, end) });
    start = end + 1;
  }
  return effects;
}

/** Every write a changelog record stands for: its own, then the effect records it carries (format 3). */
export function carriedPuts(rowKey: string, headers: Readonly<Record<string, string>> | undefined): StoreOp[] {
  const text = headers?.[CARRIED_EFFECTS_HEADER];
  if (text === undefined) return [];
  return decodeCarried(rowKey, text).map((e) => ({ type: 'put', key: e.ringKey, value: JSON.parse(e.json) as unknown }));
}

/** Headers of a record that carries no effect records: its format is 2's; one frozen object, shared. */
export const BASE_FORMAT_HEADERS: Readonly<Record<string, string>> = Object.freeze({ [FORMAT_HEADER]: String(BASE_FORMAT_VERSION) });

/** A partition's carried effect records in the order they were carried, to drop those the committed offset passed. */
interface PartitionCarried {
  committed: number | undefined;
  readonly queue: Array<{ readonly ringKey: string; readonly offset: number }>;
  head: number;
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
  /** Each row's carried records, by row key; a row with none has no entry. */
  private readonly rows = new Map<string, CarriedEffect[]>();
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
   * The records of one staged batch, given each op's own record (in order): each ring put rides
   * with the nearest table put before it in the batch, of the same store and partition, if that
   * row carries fewer than {@link MAX_CARRIED_PER_ROW}; each table put carries its row's records;
   * a table delete is preceded by its row's records, as records of their own.
   */
  records(ops: readonly StoreOp[], own: readonly OutRecord[], jsonOf: (index: number) => string | undefined): readonly OutRecord[] {
    const riders = this.riders(ops, jsonOf);
    if (riders === undefined && this.rows.size === 0) return own;
    const out: OutRecord[] = [];
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      const record = own[i]!;
      const kind = kindOf(op.key);
      if (kind === RING && op.type === 'put') {
        if (riders?.riding.has(i)) continue;
        this.supersede(op.key);
      } else if (kind === TABLE && op.type === 'put') {
        for (const rider of riders?.byRow.get(i) ?? NONE) this.carry(op.key, rider);
        const carried = this.live(op.key);
        if (carried.length > 0) {
          out.push({ ...record, headers: { [FORMAT_HEADER]: String(STORED_FORMAT_VERSION), [CARRIED_EFFECTS_HEADER]: encodeCarried(carried) } });
          continue;
        }
      } else if (kind === TABLE) {
        for (const effect of this.release(op.key)) out.push(ownRecord(record, effect));
      }
      out.push(record);
    }
    return out;
  }

  /**
   * A restore read the last record of `rowKey` so far: it carries `effects` (those a redelivery
   * may need: at or past the committed offset), or nothing (none, or a tombstone).
   */
  restoredRow(rowKey: string, effects: readonly CarriedEffect[]): void {
    if (this.rows.has(rowKey)) for (const effect of this.rows.get(rowKey)!) this.carrierOf.delete(effect.ringKey);
    this.rows.delete(rowKey);
    for (const effect of effects) this.carry(rowKey, effect);
  }

  /** The ring position `ringKey` is written (a record of its own): no row carries its earlier record from now on. */
  supersede(ringKey: string): void {
    const row = this.carrierOf.get(ringKey);
    if (row !== undefined) this.remove(row, ringKey, undefined);
  }

  /** Which ring puts ride with which table puts; undefined when none does. */
  private riders(
    ops: readonly StoreOp[],
    jsonOf: (index: number) => string | undefined,
  ): { riding: Set<number>; byRow: Map<number, CarriedEffect[]> } | undefined {
    let riding: Set<number> | undefined;
    let byRow: Map<number, CarriedEffect[]> | undefined;
    /** The last table put of each scope (store and partition) that no ring put rides with yet. */
    let free: Map<string, number> | undefined;
    /** Riders given to each row key in this batch so far (a row put twice in one batch carries them all). */
    let given: Map<string, number> | undefined;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      if (op.type !== 'put') continue;
      const kind = kindOf(op.key);
      if (kind === TABLE) (free ??= new Map()).set(scopeOf(op.key), i);
      if (kind !== RING || free === undefined) continue;
      const scope = scopeOf(op.key);
      const row = free.get(scope);
      const offset = (op.value as { offset?: unknown } | null)?.offset;
      const json = jsonOf(i);
      if (row === undefined || typeof offset !== 'number' || json === undefined) continue;
      const rowKey = ops[row]!.key;
      const before = given?.get(rowKey) ?? 0;
      if (this.live(rowKey).length + before >= MAX_CARRIED_PER_ROW) continue;
      (given ??= new Map()).set(rowKey, before + 1);
      free.delete(scope);
      (riding ??= new Set()).add(i);
      byRow ??= new Map();
      const list = byRow.get(row);
      const rider: CarriedEffect = { ringKey: op.key, offset, json };
      if (list) list.push(rider);
      else byRow.set(row, [rider]);
    }
    return riding && byRow ? { riding, byRow } : undefined;
  }

  /** The row's carried records that a redelivery may still need (the committed offset passed none of them). */
  private live(rowKey: string): readonly CarriedEffect[] {
    const carried = this.rows.get(rowKey);
    if (carried === undefined) return NONE;
    const committed = this.partitions.get(partitionOfKey(rowKey))?.committed;
    if (committed === undefined || carried.every((e) => e.offset >= committed)) return carried;
    for (const effect of carried) if (effect.offset < committed) this.remove(rowKey, effect.ringKey, effect.offset);
    return this.rows.get(rowKey) ?? NONE;
  }

  private carry(rowKey: string, effect: CarriedEffect): void {
    this.supersede(effect.ringKey);
    const carried = this.rows.get(rowKey);
    if (carried) carried.push(effect);
    else this.rows.set(rowKey, [effect]);
    this.carrierOf.set(effect.ringKey, rowKey);
    this.partition(partitionOfKey(rowKey)).queue.push({ ringKey: effect.ringKey, offset: effect.offset });
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
    const carried = this.rows.get(rowKey);
    if (!carried) return;
    const kept = carried.filter((e) => e.ringKey !== ringKey || (offset !== undefined && e.offset !== offset));
    if (kept.length === carried.length) return;
    this.carrierOf.delete(ringKey);
    if (kept.length === 0) this.rows.delete(rowKey);
    else this.rows.set(rowKey, kept);
  }

  private partition(id: string): PartitionCarried {
    let partition = this.partitions.get(id);
    if (!partition) this.partitions.set(id, (partition = { committed: undefined, queue: [], head: 0 }));
    return partition;
  }
}

const NONE: readonly CarriedEffect[] = Object.freeze([]);
const TABLE = 1;
const RING = 2;

/** TABLE or RING for keys of those kinds, else 0: read from the key's first characters, per op. */
function kindOf(key: string): number {
  if (key.startsWith('table/')) return TABLE;
  if (key.startsWith('ring/')) return RING;
  return 0;
}

/** `<store>/<topic>/<partition>` of a key: the same for a row and the ring records that may ride with it. */
function scopeOf(key: string): string {
  const a = key.indexOf('/');
  const d = nthSlash(key, a, 3);
  return key.slice(a + 1, d);
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

function positionOf(ringKey: string): number {
  return Number(ringKey.slice(ringKey.lastIndexOf('/') + 1));
}

/** An effect record that was carried, as a record of its own beside its row's record. */
function ownRecord(row: OutRecord, effect: CarriedEffect): OutRecord {
  return { topic: row.topic, partition: row.partition, key: effect.ringKey, value: Buffer.from(effect.json), headers: BASE_FORMAT_HEADERS };
}
