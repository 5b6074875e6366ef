import type { LogRecord } from '../../ports/log.js';
import { recordVersion } from '../../state/storedFormat.js';
import { carriedPuts } from './carriedEffects.js';

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
      // Formats 1 (no header) to 3 are read; a newer one is refused, naming the store.
      recordVersion(record.key, record.headers);
      if (record.value === null) this.values.delete(record.key);
      else this.values.set(record.key, parseValue(record));
      changed.push(record.key);
      // A table row's record of format 3 stands for the effect records it carries too.
      for (const carried of carriedPuts(record.key, record.headers)) {
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

function parseValue(record: Pick<LogRecord, 'topic' | 'partition' | 'offset' | 'value'>): unknown {
  try {
    return JSON.parse(decoder.decode(record.value!));
  } catch (error) {
    throw new Error(`changelog ${record.topic}/${record.partition}@${record.offset}: its value is not UTF-8 JSON (${(error as Error).message})`, {
      cause: error,
    });
  }
}
