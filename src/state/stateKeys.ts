import { attemptsStoreOf, type StateStore, type StoreKind } from '../graph/stores.js';
import type { TopicPartition } from '../ports/log.js';

// Every key orderly writes, in one place, so that the layout of the state is readable at a glance.
//
// Every key is `<kind>/<store>/<topic>/<partition>/<rest>`, partition-scoped like Kafka Streams'
// stores: a partition's state is a handful of prefixes, so it can be scanned, wiped, restored
// and handed over to another worker alone, and each key names the changelog (the store) and the
// changelog partition (the source partition) it belongs to. The store name, the topic and a
// lane are encoded with encodeURIComponent, so a '/' in them never shifts the segments; `<rest>`
// is the last segment and may hold '/' (an effect id is `topic/partition/offset`).

/** The kinds of key, each held by one kind of store. */
export type KeyKind = 'effect' | 'ring' | 'horizon' | 'table' | 'attempts' | 'parked' | 'held' | 'heldid' | 'run';

const kindsOfStore: Record<StoreKind, readonly KeyKind[]> = {
  // An effect's failed attempts live in its own store, beside its records (no topic of their own).
  effects: ['effect', 'ring', 'horizon', 'table', 'attempts'],
  attempts: ['attempts'],
  park: ['parked', 'held', 'heldid'],
  runs: ['run'],
};

const enc = encodeURIComponent;
const pad = (n: number): string => n.toString().padStart(16, '0');
/** Scopes made so far, by kind, store, topic and partition: every write of an event builds keys in a few of them. */
const scopes = new Map<KeyKind, Map<string, Map<string, string[]>>>();

/** `<kind>/<store>/<topic>/<partition>/`, encoded once per scope rather than for each key. */
function scope(kind: KeyKind, store: string, tp: TopicPartition): string {
  let ofKind = scopes.get(kind);
  if (!ofKind) scopes.set(kind, (ofKind = new Map()));
  let ofStore = ofKind.get(store);
  if (!ofStore) ofKind.set(store, (ofStore = new Map()));
  let ofTopic = ofStore.get(tp.topic);
  if (!ofTopic) {
    // Bounded: a worker's topics are few; past this many (a test making topics by the thousand), no caching.
    if (ofStore.size >= 1_000) return scopeOf(kind, store, tp);
    ofStore.set(tp.topic, (ofTopic = []));
  }
  return (ofTopic[tp.partition] ??= scopeOf(kind, store, tp));
}

const scopeOf = (kind: KeyKind, store: string, tp: TopicPartition): string => `${kind}/${enc(store)}/${enc(tp.topic)}/${tp.partition}/`;

/** A state key taken apart. */
export interface ParsedKey {
  readonly kind: KeyKind;
  readonly store: string;
  readonly topic: string;
  readonly partition: number;
  /** What follows the partition, as written (lanes stay encoded). */
  readonly rest: string;
}

const kinds: ReadonlySet<string> = new Set<KeyKind>(['effect', 'ring', 'horizon', 'table', 'attempts', 'parked', 'held', 'heldid', 'run']);

/** Takes a state key apart; throws, naming the key, if it is not one of orderly's. */
function parse(key: string): ParsedKey {
  const parts = key.split('/');
  const partition = Number(parts[3]);
  if (parts.length < 5 || !kinds.has(parts[0]!) || !Number.isInteger(partition) || partition < 0) {
    throw new Error(`'${key}' is not an orderly state key (<kind>/<store>/<topic>/<partition>/<rest>)`);
  }
  return {
    kind: parts[0] as KeyKind,
    store: decodeURIComponent(parts[1]!),
    topic: decodeURIComponent(parts[2]!),
    partition,
    rest: parts.slice(4).join('/'),
  };
}

/** Store names as written in keys (encoded) to their names: few, and decoding each key's costs a string per write. */
const storeNames = new Map<string, string>();

/**
 * The store and the partition of a key, as {@link parse} gives them, without taking the rest of
 * the key apart: what each write to a changelog needs.
 */
function storeAndPartition(key: string): { store: string; partition: number } {
  const a = key.indexOf('/');
  const b = key.indexOf('/', a + 1);
  const c = b < 0 ? -1 : key.indexOf('/', b + 1);
  const d = c < 0 ? -1 : key.indexOf('/', c + 1);
  // Anything unusual goes the long way, which throws the error naming the key.
  if (a < 0 || d < 0 || !kinds.has(key.slice(0, a))) return parse(key);
  const partition = Number(key.slice(c + 1, d));
  if (!Number.isInteger(partition) || partition < 0) return parse(key);
  const encoded = key.slice(a + 1, b);
  let store = storeNames.get(encoded);
  if (store === undefined) {
    store = decodeURIComponent(encoded);
    if (storeNames.size < 1_000) storeNames.set(encoded, store);
  }
  return { store, partition };
}

export const stateKeys = {
  /** The record of an applied (or discarded) effect, by effect id: dedup is per partition. */
  effect: (store: string, tp: TopicPartition, effectId: string) => `${scope('effect', store, tp)}${effectId}`,
  /**
   * The record of an applied effect with an id derived from its offset, at its position in the
   * partition's ring (`offset` modulo the ring's size, see EffectRing): a later event overwrites it
   * once the committed offset has passed it, so these records are never deleted.
   */
  ring: (store: string, tp: TopicPartition, position: number) => `${scope('ring', store, tp)}${position}`,
  /**
   * The ring position `position` beside a table row: the ring of the row's store and partition
   * (where the effect records that the row's changelog record carries belong).
   */
  ringBesideRow: (rowKey: string, position: number): string => {
    if (!rowKey.startsWith('table/')) throw new Error(`'${rowKey}' is not a table row's state key (table/<store>/<topic>/<partition>/<row>)`);
    let d = 0;
    for (let i = 0; i < 4 && d >= 0; i++) d = rowKey.indexOf('/', d + 1);
    if (d < 0) throw new Error(`'${rowKey}' is not a table row's state key (table/<store>/<topic>/<partition>/<row>)`);
    return `ring${rowKey.slice(5, d + 1)}${position}`;
  },
  /** The ring of effect records of one partition of a store. */
  ringPartitionPrefix: (store: string, tp: TopicPartition) => scope('ring', store, tp),
  /** Effect records of one partition of a store, by effect id (declared ids, replays, and records written before the ring). */
  effectPartitionPrefix: (store: string, tp: TopicPartition) => scope('effect', store, tp),
  /** The partition's effect horizon: no effect record with an offset-derived id lies at or past it (see EffectHorizon). */
  horizon: (store: string, tp: TopicPartition) => `${scope('horizon', store, tp)}offsets`,
  /** Effect records of every partition of a store, by effect id. */
  effectPrefix: (store: string) => `effect/${enc(store)}/`,
  /** Effect records of every partition of a store, in their rings. */
  ringPrefix: (store: string) => `ring/${enc(store)}/`,
  /** A row that an effect wrote to its own state table. */
  table: (store: string, tp: TopicPartition, row: string) => `${scope('table', store, tp)}${row}`,
  /** Table rows of every partition of a store. */
  tablePrefix: (store: string) => `table/${enc(store)}/`,
  /** Failed attempts of one event at a step (in the step's `<step>-attempts` store). */
  attempts: (step: string, tp: TopicPartition, offset: number) => `${scope('attempts', attemptsStoreOf(step), tp)}${pad(offset)}`,
  /** Failed attempts of one event in a store: a step's `<step>-attempts`, or an effect's own store. */
  attemptsIn: (store: string, tp: TopicPartition, offset: number) => `${scope('attempts', store, tp)}${pad(offset)}`,
  /** One completed durable step of an event's run at an agent step (in the step's `<step>-runs` store), by effect id and position from 0. */
  runStep: (store: string, tp: TopicPartition, effectId: string, position: number) => `${scope('run', store, tp)}${effectId}/${pad(position)}`,
  /** Run journals of one partition of a runs store. */
  runPartitionPrefix: (store: string, tp: TopicPartition) => scope('run', store, tp),
  /** A parked key of a partition. */
  parkedKey: (park: string, tp: TopicPartition, lane: string) => `${scope('parked', park, tp)}${enc(lane)}`,
  parkedKeyPrefix: (park: string, tp: TopicPartition) => scope('parked', park, tp),
  /** One event held behind a parked key, in arrival order. */
  heldEvent: (park: string, tp: TopicPartition, lane: string, seq: number) => `${scope('held', park, tp)}${enc(lane)}/${pad(seq)}`,
  /** Which parked key holds an event, by effect id: a redelivered held event is not held twice. */
  heldIndex: (park: string, tp: TopicPartition, effectId: string) => `${scope('heldid', park, tp)}${effectId}`,

  parse,
  storeAndPartition,
  /** The source partition a key belongs to (and so its changelog partition). */
  partitionOf: (key: string): TopicPartition => {
    const { topic, partition } = parse(key);
    return { topic, partition };
  },
  /** The store a key belongs to (and so its changelog topic). */
  storeOf: (key: string): string => parse(key).store,
  /** Every prefix of one partition's keys in these stores: together they hold all its state. */
  partitionPrefixes: (stores: readonly StateStore[], tp: TopicPartition): string[] =>
    stores.flatMap((store) => kindsOfStore[store.kind].map((kind) => scope(kind, store.name, tp))),
} as const;
