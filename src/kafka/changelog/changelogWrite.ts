import type { OutRecord } from '../../ports/log.js';
import type { StoreOp } from '../../ports/store.js';
import { stateKeys } from '../../state/stateKeys.js';
import { BASE_FORMAT_VERSION, FORMAT_HEADER, localFromJson, markedFromJson } from '../../state/storedFormat.js';

// How one write to the store becomes its changelog record: its topic, its partition and its value
// in the stored format written (the format itself: src/kafka/changelog/changelogRecords.ts).

/** The stored formats a worker writes its changelogs in (`runTopology`'s `storedFormat`). */
export type WrittenFormat = 2 | 4;

/** The changelog topic of a store: `<group>-<store>-changelog`. */
export function changelogTopic(group: string, store: string): string {
  return `${group}-${store}-changelog`;
}

/** Headers of a format-2 record (and of a format-3 record that carries no effect records): one frozen object, shared. */
const BASE_FORMAT_HEADERS: Readonly<Record<string, string>> = Object.freeze({ [FORMAT_HEADER]: String(BASE_FORMAT_VERSION) });

/** Changelog topics by group, then store: the same few strings for every record. */
const topics = new Map<string, Map<string, string>>();

function cachedChangelogTopic(group: string, store: string): string {
  let ofGroup = topics.get(group);
  if (!ofGroup) topics.set(group, (ofGroup = new Map()));
  let topic = ofGroup.get(store);
  if (topic === undefined) ofGroup.set(store, (topic = changelogTopic(group, store)));
  return topic;
}

/** The changelog record of one write to the store, in the stored format `format` (4 unless told). */
export function toChangelogRecord(group: string, op: StoreOp, format: WrittenFormat = 4): OutRecord {
  return changelogRecordOf(encodeWrite(group, op), format);
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
 * One write to the store, its value encoded to JSON once for both places it goes: `local`, its op
 * for the local store (a put's stored text, `v2:` and the JSON, as {@link EncodedPut}), and what
 * its changelog record is made of, which {@link changelogRecordOf} makes only when the record is
 * sent: a write whose record is carried by another's (an effect record riding with its row) never
 * makes its own.
 */
export interface EncodedWrite {
  readonly local: StoreOp | EncodedPut;
  /** Its changelog topic and partition (the state key's source partition). */
  readonly topic: string;
  readonly partition: number;
  readonly key: string;
  /** The value's JSON; undefined for a delete, or a value JSON cannot hold (`undefined`, a function). */
  readonly json: string | undefined;
}

/** Encodes one write to the store (see {@link EncodedWrite}); throws if its key is not a state key. */
export function encodeWrite(group: string, op: StoreOp): EncodedWrite {
  const { store, partition } = stateKeys.storeAndPartition(op.key);
  const topic = cachedChangelogTopic(group, store);
  const key = op.key;
  if (op.type === 'del') return { local: op, topic, partition, key, json: undefined };
  const json = op.json ?? (JSON.stringify(op.value) as string | undefined);
  // `undefined` (or a function) has no JSON: the op goes as it is, and its record with no bytes.
  if (json === undefined) return { local: op, topic, partition, key, json };
  return { local: { type: 'put', key, value: localFromJson(json), valueEncoding: 'utf8' }, topic, partition, key, json };
}

/**
 * The changelog record of an encoded write in the stored format `format`: 2, the JSON's UTF-8
 * bytes and the format header; 4, `v4:` and the JSON, no header. A delete is a tombstone (a null
 * value).
 */
export function changelogRecordOf(write: EncodedWrite, format: WrittenFormat): OutRecord {
  const { topic, partition, key, json } = write;
  if (write.local.type === 'del') return recordOf(topic, partition, key, null, format);
  return recordOf(topic, partition, key, json === undefined ? new Uint8Array(0) : jsonValue(json, format), format);
}

/** The changelog record of a put whose value's JSON is `json` (an effect record a row carried, written as its own), in the stored format `format`. */
export function jsonRecord(topic: string, partition: number, key: string, json: string, format: WrittenFormat): OutRecord {
  return recordOf(topic, partition, key, jsonValue(json, format), format);
}

/** A record's value at `format`: 2, the JSON's bytes; 4, `v4:` then the JSON. */
function jsonValue(json: string, format: WrittenFormat): Buffer {
  return Buffer.from(format === 2 ? json : markedFromJson(json));
}

function recordOf(topic: string, partition: number, key: string, value: Uint8Array | null, format: WrittenFormat): OutRecord {
  return format === 2 ? { topic, partition, key, value, headers: BASE_FORMAT_HEADERS } : { topic, partition, key, value };
}
