import type { OutRecord } from '../../ports/log.js';
import type { StoreOp } from '../../ports/store.js';
import { stateKeys } from '../../state/stateKeys.js';
import { localFromJson, recordVersion } from '../../state/storedFormat.js';
import { BASE_FORMAT_HEADERS, CARRIED_EFFECTS_HEADER, carriedPuts, decodeCarried, type CarriedEffects } from './carriedEffects.js';

// The changelog format, which other tools (`orderly parked ...`) read:
// - topic: `<group>-<store>-changelog`, compacted, with the source topic's partition count;
// - partition: the source partition of the state key (`<kind>/<store>/<topic>/<partition>/<rest>`);
// - key: the state key, UTF-8;
// - value: the stored value as JSON in UTF-8, or null (a tombstone) for a deleted key;
// - header `orderly-format`: the stored format's version (src/state/storedFormat.ts); a record
//   without it is of version 1 (written before formats had versions);
// - header `orderly-effects` (version 3, a table row's record only): the effect records the row's
//   record carries (src/kafka/changelog/carriedEffects.ts).

/** Kafka's rule for topic names (legal characters; at most 249 of them). */
const LEGAL_TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Thrown when a store's changelog topic would not be a legal Kafka topic name. */
export class ChangelogNameError extends Error {
  constructor(
    readonly store: string,
    message: string,
  ) {
    super(message);
    this.name = 'ChangelogNameError';
  }
}

/** The changelog topic of a store: `<group>-<store>-changelog`. */
export function changelogTopic(group: string, store: string): string {
  return `${group}-${store}-changelog`;
}

/** The changelog topic of a store, or a {@link ChangelogNameError} naming the store and the fix. */
export function checkedChangelogTopic(group: string, store: string): string {
  const topic = changelogTopic(group, store);
  if (LEGAL_TOPIC.test(topic)) return topic;
  const operator = store.replace(/-(attempts|runs)$/, '');
  const legal = (part: string): boolean => /^[a-zA-Z0-9._-]*$/.test(part);
  let why: string;
  let fix: string;
  if (!legal(store) || !legal(group)) {
    why = 'holds characters Kafka does not allow in a topic name (only a-z, A-Z, 0-9, ., _ and -)';
    fix = legal(store)
      ? `use a consumer group name of those characters only`
      : `rename the operator '${operator}' (its name names the store), e.g. with { name: '${operator.replace(/[^a-zA-Z0-9._-]+/g, '-')}' }`;
  } else {
    why = `is ${topic.length} characters long (Kafka allows 249)`;
    fix = `give the operator '${operator}' a shorter name, or use a shorter consumer group name`;
  }
  throw new ChangelogNameError(store, `store '${store}': its changelog topic '${topic}' ${why}; ${fix}`);
}

/** Changelog topics by group, then store: the same few strings for every record. */
const topics = new Map<string, Map<string, string>>();

function cachedChangelogTopic(group: string, store: string): string {
  let ofGroup = topics.get(group);
  if (!ofGroup) topics.set(group, (ofGroup = new Map()));
  let topic = ofGroup.get(store);
  if (topic === undefined) ofGroup.set(store, (topic = changelogTopic(group, store)));
  return topic;
}

/** The changelog record of one write to the store. */
export function toChangelogRecord(group: string, op: StoreOp): OutRecord {
  return encodeWrite(group, op).record;
}

/**
 * A put whose value is already its stored text (`v2:` and the JSON): LevelDB stores it as it is.
 * Text, not bytes: abstract-level's chained batch takes a put with its own `valueEncoding` about
 * 7 times slower than one in the store's default encoding (utf8), measured 7.9 against 1.0 µs
 * per put; the binding copies the text's UTF-8 bytes in C++.
 */
export interface EncodedPut {
  readonly type: 'put';
  readonly key: string;
  readonly value: string;
  readonly valueEncoding: 'utf8';
}

/**
 * One write to the store, its value encoded to JSON once for both places it goes: its stored text
 * (`v2:` and the JSON) for the local store (a put as {@link EncodedPut}), and the JSON's UTF-8
 * bytes as its changelog record's value.
 */
export function encodeWrite(group: string, op: StoreOp): { readonly local: StoreOp | EncodedPut; readonly record: OutRecord; readonly json?: string } {
  const { store, partition } = stateKeys.storeAndPartition(op.key);
  const topic = cachedChangelogTopic(group, store);
  if (op.type === 'del') return { local: op, record: { topic, partition, key: op.key, value: null, headers: BASE_FORMAT_HEADERS } };
  const json = JSON.stringify(op.value) as string | undefined;
  // `undefined` (or a function) has no JSON: the op goes as it is, and its record as before.
  if (json === undefined) return { local: op, record: { topic, partition, key: op.key, value: encoder.encode(json), headers: BASE_FORMAT_HEADERS } };
  return {
    local: { type: 'put', key: op.key, value: localFromJson(json), valueEncoding: 'utf8' },
    record: { topic, partition, key: op.key, value: Buffer.from(json), headers: BASE_FORMAT_HEADERS },
    json,
  };
}

/**
 * The write to the store that a changelog record stands for (its own key's; a table row's record
 * of format 3 stands for the effect records it carries too: {@link changelogRecordWrites}). A
 * record without the format header is of version 1 (same shapes); one of a newer version than
 * this orderly reads is refused (`StoredFormatError`, naming the store, the version and the fix).
 */
export function fromChangelogRecord(record: {
  readonly key: string | null;
  readonly value: Uint8Array | null;
  readonly headers?: Readonly<Record<string, string>> | undefined;
}): StoreOp {
  if (record.key === null) throw new Error('a changelog record has no key; orderly writes every record with its state key');
  recordVersion(record.key, record.headers);
  if (record.value === null) return { type: 'del', key: record.key };
  return { type: 'put', key: record.key, value: JSON.parse(decoder.decode(record.value)) as unknown };
}

/** Every write a changelog record stands for: its own key's, then those of the effect records it carries (format 3). */
export function changelogRecordWrites(record: Parameters<typeof fromChangelogRecord>[0]): StoreOp[] {
  const own = fromChangelogRecord(record);
  return [own, ...carriedPuts(own.key, record.headers)];
}

/** A changelog record as a restore reads it. */
export interface RestoredRecord {
  readonly key: string | null;
  readonly value: Uint8Array | null;
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/**
 * Where a full restore writes: keys under these prefixes were wiped before it began, so a delete
 * of one that this restore has not written is a delete of nothing. Up to `maxKeys` written keys
 * are remembered to tell; past that, every delete is written.
 */
export interface EmptiedPrefixes {
  readonly prefixes: readonly string[];
  readonly maxKeys: number;
}

/**
 * The local writes a restore makes of changelog records, gathered over several polled batches:
 * the last write of each key only (the writes land in the local store at once, so the earlier
 * ones would never be read: an effect record put then pruned costs one delete, a key written by
 * every event one put), each value stored as the text of the bytes the record carries behind the
 * `v2:` prefix, never parsed as JSON and encoded again. In a full restore ({@link EmptiedPrefixes}),
 * the delete of a key that was never written locally is left out (a compacted changelog holds
 * many tombstones whose puts are gone). A table row's record of format 3 adds the effect records it
 * carries, each as a put of its own, in the record's place in the changelog's order. A record of a
 * newer format than this orderly reads is refused as in {@link fromChangelogRecord}.
 */
export class RestoreWrites {
  /** Each key's last record: its value (null: a tombstone; text: the JSON of a carried effect record). */
  private last = new Map<string, Uint8Array | string | null>();
  private bytes = 0;
  /** Keys under the emptied prefixes that this restore wrote; undefined when every delete is written. */
  private written: Set<string> | undefined;

  constructor(
    private readonly emptied?: EmptiedPrefixes,
    /** Where the carried effect records read are noted (so that the rows' next records carry them again), and the partition's committed offset: records of events below it are not needed. */
    private readonly carrying?: { readonly carried: CarriedEffects; readonly committed: number | undefined },
  ) {
    if (emptied) this.written = new Set();
  }

  /** Keys held (the writes {@link take} would return at most). */
  get size(): number {
    return this.last.size;
  }

  /** Bytes of the records added since the last {@link take} (keys and values, the overwritten ones too): at least what is held. */
  get addedBytes(): number {
    return this.bytes;
  }

  add(records: readonly RestoredRecord[]): void {
    const last = this.last;
    const carried = this.carrying?.carried;
    for (const record of records) {
      const key = record.key;
      if (key === null) throw new Error('a changelog record has no key; orderly writes every record with its state key');
      recordVersion(key, record.headers);
      last.set(key, record.value);
      this.bytes += key.length + (record.value?.length ?? 0);
      const text = record.headers?.[CARRIED_EFFECTS_HEADER];
      if (text !== undefined) this.addCarried(key, text, record.value === null);
      else if (carried !== undefined && key.startsWith('ring/')) carried.supersede(key);
      else if (carried !== undefined && key.startsWith('table/')) carried.restoredRow(key, []);
    }
  }

  /** The effect records a row's record carries, each as a put of its own; those of events below the committed offset are never read again: left out. */
  private addCarried(rowKey: string, text: string, tombstone: boolean): void {
    const committed = this.carrying?.committed;
    const needed = tombstone ? [] : decodeCarried(rowKey, text, committed);
    for (const effect of needed) {
      this.last.set(effect.ringKey, effect.json);
      this.bytes += effect.ringKey.length + effect.json.length;
    }
    this.carrying?.carried.restoredRow(rowKey, needed);
  }

  /** The writes gathered so far, each key's last; starts gathering anew. */
  take(): Array<StoreOp | EncodedPut> {
    const last = this.last;
    this.last = new Map();
    this.bytes = 0;
    const writes: Array<StoreOp | EncodedPut> = [];
    for (const [key, value] of last) {
      if (value === null) {
        if (this.mayBeStored(key)) writes.push({ type: 'del', key });
        continue;
      }
      if (typeof value === 'string') {
        writes.push({ type: 'put', key, value: localFromJson(value), valueEncoding: 'utf8' });
        this.remember(key);
        continue;
      }
      // The JSON's text as Node decodes UTF-8: what orderly wrote (JSON.stringify escapes lone
      // surrogates) comes back byte for byte; bytes that are not UTF-8 become U+FFFD.
      const json = (Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)).toString('utf8');
      writes.push({ type: 'put', key, value: localFromJson(json), valueEncoding: 'utf8' });
      this.remember(key);
    }
    return writes;
  }

  /** Whether the local store may hold the key (a delete of it must be written). */
  private mayBeStored(key: string): boolean {
    const written = this.written;
    if (written === undefined || !this.emptied!.prefixes.some((prefix) => key.startsWith(prefix))) return true;
    return written.delete(key);
  }

  private remember(key: string): void {
    const written = this.written;
    if (written === undefined) return;
    written.add(key);
    // Past the bound, every delete is written: correct, only no longer spared.
    if (written.size > this.emptied!.maxKeys) this.written = undefined;
  }
}
