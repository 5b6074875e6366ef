import type { LogRecord } from '../../ports/log.js';
import { carriedPuts } from './carriedEffects.js';
import { readChangelogValue } from './changelogRecords.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * A changelog folded into the state it describes: the latest value of each key, a null value (a
 * tombstone) removing the key. Values are the JSON of the stored values.
 */
export class ChangelogFold {
  private readonly values = new Map<string, unknown>();

  /** Folds records in log order; returns the keys that changed. */
  apply(records: ReadonlyArray<Pick<LogRecord, 'topic' | 'partition' | 'offset' | 'key' | 'value'> & { readonly headers?: LogRecord['headers'] }>): string[] {
    const changed: string[] = [];
    for (const record of records) {
      if (record.key === null)
        throw new Error(`changelog ${record.topic}/${record.partition}@${record.offset} has no key; a changelog record's key is the state key`);
      // Every format up to this orderly's is read; a newer one is refused, naming the store.
      const { json, carried: carriedLines } = readChangelogValue(record.key, record.value === null ? null : utf8(record), record.headers);
      if (json === null) this.values.delete(record.key);
      else this.values.set(record.key, parseJson(record, json));
      changed.push(record.key);
      // A table row's record of format 3 or 4 stands for the effect records it carries too.
      for (const carried of carriedPuts(record.key, carriedLines)) {
        this.values.set(carried.key, carried.type === 'put' ? carried.value : undefined);
        changed.push(carried.key);
      }
    }
    return changed;
  }

  get<T>(key: string): T | undefined {
    return this.values.get(key) as T | undefined;
  }

  /** The keys that start with `prefix`, in key order (the store's order). */
  keys(prefix: string): string[] {
    return [...this.values.keys()].filter((k) => k.startsWith(prefix)).sort();
  }

  get size(): number {
    return this.values.size;
  }
}

function utf8(record: Pick<LogRecord, 'topic' | 'partition' | 'offset' | 'value'>): string {
  try {
    return decoder.decode(record.value!);
  } catch (error) {
    throw new Error(`changelog ${record.topic}/${record.partition}@${record.offset}: its value is not UTF-8 JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
}

function parseJson(record: Pick<LogRecord, 'topic' | 'partition' | 'offset'>, json: string): unknown {
  try {
    return JSON.parse(json);
  } catch (error) {
    throw new Error(`changelog ${record.topic}/${record.partition}@${record.offset}: its value is not UTF-8 JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
}
