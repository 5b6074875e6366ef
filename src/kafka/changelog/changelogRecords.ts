import type { StoreOp } from '../../ports/store.js';
import { afterVersion, localFromJson, recordVersion } from '../../state/storedFormat.js';
import { CARRIED_EFFECTS_HEADER, carriedPuts, decodeCarried, type CarriedEffects } from './carriedEffects.js';
import { changelogTopic, type EncodedPut } from './changelogWrite.js';

// The changelog format, which other tools (`orderly parked ...`) read:
// - topic: `<group>-<store>-changelog`, compacted, with the source topic's partition count;
// - partition: the source partition of the state key (`<kind>/<store>/<topic>/<partition>/<rest>`);
// - key: the state key, UTF-8;
// - value: null (a tombstone) for a deleted key; else, in UTF-8:
//   - format 4 (no headers): `v4:`, the stored value's JSON, and for a table row's record that
//     carries effect records, a newline and their lines (src/kafka/changelog/carriedEffects.ts);
//   - formats 2 and 3: the stored value's JSON, with the header `orderly-format` holding the
//     version (src/state/storedFormat.ts) and, at 3, the header `orderly-effects` the lines of
//     the effect records a table row's record carries;
//   - format 1 (written before formats had versions): the JSON, no header.
//   JSON text never starts with `v`, so a value without a header tells 1 from 4 by its first byte.

/** Kafka's rule for topic names (legal characters; at most 249 of them). */
const LEGAL_TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;

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

/** What a changelog record holds, in whichever format it was written. */
export interface ChangelogContent {
  /** The stored value's JSON; null for a tombstone. */
  readonly json: string | null;
  /** The lines of the effect records a table row's record carries (formats 3 and 4); undefined when it carries none. */
  readonly carried: string | undefined;
}

/**
 * Reads a changelog record's value (`text`, its UTF-8 decoded) in any format this orderly reads:
 * with the format header, the value is the JSON (formats 1 to 3); without it, a value that starts
 * with `v` carries its version (format 4), any other is JSON (format 1). A version newer than this
 * orderly reads is refused (`StoredFormatError`, naming the store, the version and the fix).
 */
export function readChangelogValue(key: string, text: string | null, headers: Readonly<Record<string, string>> | undefined): ChangelogContent {
  const version = recordVersion(key, headers);
  if (text === null) return { json: null, carried: undefined };
  if (version > 1 || text.charCodeAt(0) !== 0x76 /* v */) return { json: text, carried: headers?.[CARRIED_EFFECTS_HEADER] };
  return readMarkedValue(key, text);
}

/** A value that carries its version (format 4, text starting with `v`): its JSON, and the carried records' lines after it. */
function readMarkedValue(key: string, text: string): ChangelogContent {
  const rest = afterVersion(key, text, 'the changelog record');
  const newline = rest.indexOf('\n');
  return newline < 0 ? { json: rest, carried: undefined } : { json: rest.slice(0, newline), carried: rest.slice(newline + 1) };
}

/**
 * The write to the store that a changelog record stands for (its own key's; a table row's record
 * of format 3 or 4 stands for the effect records it carries too: {@link changelogRecordWrites}).
 * A record without a version is of version 1 (same shapes); one of a newer version than this
 * orderly reads is refused (`StoredFormatError`, naming the store, the version and the fix).
 */
export function fromChangelogRecord(record: {
  readonly key: string | null;
  readonly value: Uint8Array | null;
  readonly headers?: Readonly<Record<string, string>> | undefined;
}): StoreOp {
  return changelogRecordWrites(record)[0]!;
}

/** Every write a changelog record stands for: its own key's, then those of the effect records it carries (formats 3 and 4). */
export function changelogRecordWrites(record: Parameters<typeof fromChangelogRecord>[0]): StoreOp[] {
  if (record.key === null) throw new Error('a changelog record has no key; orderly writes every record with its state key');
  const { json, carried } = readChangelogValue(record.key, record.value === null ? null : decoder.decode(record.value), record.headers);
  if (json === null) return [{ type: 'del', key: record.key }];
  return [{ type: 'put', key: record.key, value: JSON.parse(json) as unknown }, ...carriedPuts(record.key, carried)];
}

/**
 * A record's value as text, as Node decodes UTF-8: what orderly wrote (JSON.stringify escapes
 * lone surrogates) comes back byte for byte; bytes that are not UTF-8 become U+FFFD.
 */
function utf8(value: Uint8Array): string {
  return (Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)).toString('utf8');
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
 * many tombstones whose puts are gone). A table row's record of format 3 or 4 adds the effect records it
 * carries, each as a put of its own, in the record's place in the changelog's order. A record of a
 * newer format than this orderly reads is refused as in {@link fromChangelogRecord}.
 */
export class RestoreWrites {
  /** Each key's last record: its value (null: a tombstone; bytes: the JSON of a record of format 1 to 3; text: the JSON of one of format 4, or of a carried effect record). */
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
      const value = record.value;
      const version = recordVersion(key, record.headers);
      let text: string | undefined;
      if (version === 1 && value !== null && value[0] === 0x76 /* v */) {
        // Format 4: the version, the JSON and the carried records are in the value.
        const content = readMarkedValue(key, utf8(value));
        last.set(key, content.json);
        text = content.carried;
      } else {
        last.set(key, value);
        text = record.headers?.[CARRIED_EFFECTS_HEADER];
      }
      this.bytes += key.length + (value?.length ?? 0);
      if (text !== undefined) this.addCarried(key, text, value === null);
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
      writes.push({ type: 'put', key, value: localFromJson(utf8(value)), valueEncoding: 'utf8' });
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
