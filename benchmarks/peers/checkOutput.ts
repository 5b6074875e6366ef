/** One record of a topic as the check reads it: where it sits, its key and its value (UTF-8). */
export interface ReadRecord {
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly value: string | null;
}

/** Each key's event ids, in the input's order (a key's events sit in one partition). */
export type ExpectedOrder = ReadonlyMap<string, readonly string[]>;

/** What a contender's output held, once it passed. */
export interface OutputSummary {
  readonly records: number;
  readonly keys: number;
  /** Records of an event already seen (at-least-once redelivery); 0 on a run without restarts. */
  readonly duplicates: number;
}

/** A contender's output refused: lost, reordered, misplaced or malformed records. */
export class OutputRefused extends Error {
  constructor(
    readonly contender: string,
    readonly topic: string,
    readonly reason: string,
  ) {
    super(`bench:peers: the output of ${contender} (${topic}) is refused: ${reason}; its figures do not count`);
    this.name = 'OutputRefused';
  }
}

/** The event ids of each key, in the order the input topic holds them (its values are the benchmark's JSON events). */
export function expectedOrder(input: Iterable<ReadRecord>): Map<string, string[]> {
  const byKey = new Map<string, string[]>();
  for (const record of input) {
    const id = (JSON.parse(record.value ?? 'null') as { disputeId?: string } | null)?.disputeId;
    if (record.key === null || typeof id !== 'string')
      throw new Error(`bench:peers: input record ${record.partition}/${record.offset} has no key or no disputeId`);
    let ids = byKey.get(record.key);
    if (!ids) byKey.set(record.key, (ids = []));
    ids.push(id);
  }
  return byKey;
}

/**
 * Checks a contender's output against the input, in each partition's offset order: all of a
 * key's records sit in one partition; every record is `{"id", "count"}` JSON keyed like its
 * event; each key's events come in input order, where a record of an event already seen is a
 * duplicate (allowed: at-least-once) and one of a later event before an earlier one is
 * reordering; the count is at least the event's position in its key (its state was updated);
 * at the end every event of every key has come. Throws {@link OutputRefused} at the first breach.
 */
export function checkOutput(contender: string, topic: string, expected: ExpectedOrder, output: readonly ReadRecord[]): OutputSummary {
  const refuse = (reason: string): never => {
    throw new OutputRefused(contender, topic, reason);
  };
  const partitionOf = new Map<string | null, number>();
  for (const record of output) {
    const partition = partitionOf.get(record.key) ?? record.partition;
    if (partition !== record.partition) refuse(`key ${record.key} has records in partitions ${partition} and ${record.partition}: not keyed like the input`);
    partitionOf.set(record.key, partition);
  }
  /** Each key's index of its next expected event. */
  const progress = new Map<string, { next: number }>();
  let records = 0;
  let duplicates = 0;
  for (const record of output) {
    records += 1;
    const at = `record ${record.partition}/${record.offset}`;
    const ids = record.key === null ? undefined : expected.get(record.key);
    if (!ids) refuse(`${at} has key ${JSON.stringify(record.key)}, which no input event has`);
    const key = record.key!;
    const value = parseOutput(record.value);
    if (!value) refuse(`${at} of key ${key} is not {"id", "count"} JSON: ${JSON.stringify(record.value)}`);
    const { id, count } = value!;
    let state = progress.get(key);
    if (!state) progress.set(key, (state = { next: 0 }));
    const position = ids!.indexOf(id);
    if (position < 0) refuse(`${at} of key ${key} names event ${id}, which is not one of that key's events`);
    if (position < state.next) {
      duplicates += 1;
      continue;
    }
    if (position > state.next) refuse(`key ${key}: event ${id} came before ${ids![state.next]} (reordered)`);
    state.next += 1;
    if (count < state.next) refuse(`${at}: key ${key}'s count after event ${id} is ${count}, below its ${state.next} events so far (its state lost updates)`);
  }
  let missing = 0;
  let example: string | undefined;
  for (const [key, ids] of expected) {
    const next = progress.get(key)?.next ?? 0;
    missing += ids.length - next;
    if (next < ids.length) example ??= `key ${key}'s ${ids[next]}`;
  }
  if (missing > 0) refuse(`${missing} of ${records - duplicates + missing} events have no output record (short), the first: ${example}`);
  return { records, keys: progress.size, duplicates };
}

function parseOutput(value: string | null): { id: string; count: number } | undefined {
  try {
    const parsed = JSON.parse(value ?? 'null') as { id?: unknown; count?: unknown } | null;
    return typeof parsed?.id === 'string' && Number.isInteger(parsed.count) ? { id: parsed.id, count: parsed.count as number } : undefined;
  } catch {
    return undefined;
  }
}
