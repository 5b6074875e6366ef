import type { Headers } from '../src/ports/log.js';
import type { Serde } from '../src/dsl/serde.js';
import type { MemoryLog } from './memoryLog.js';

export interface PipeOptions {
  /** The partition to write to. @defaultValue Kafka's default partitioner over the key */
  partition?: number;
  headers?: Headers;
}

/** Writes records to an input topic of the driver, at the driver's current virtual time. */
export class TestInputTopic<T> {
  /** @internal */
  constructor(
    readonly name: string,
    private readonly log: MemoryLog,
    private readonly serde: Serde<T>,
    private readonly nowMs: () => number,
  ) {}

  /** Appends one record; returns its partition and offset. */
  pipeInput(key: string | null, value: T, options: PipeOptions = {}): { partition: number; offset: number } {
    return this.pipeRaw(key, this.serde.serialize(value), options);
  }

  /** Appends bytes as they are (a malformed payload, a tombstone with `null`). */
  pipeRaw(key: string | null, value: Uint8Array | string | null, options: PipeOptions = {}): { partition: number; offset: number } {
    const bytes = typeof value === 'string' ? new TextEncoder().encode(value) : value;
    const record = this.log.append(
      {
        topic: this.name,
        key,
        value: bytes,
        ...(options.partition !== undefined ? { partition: options.partition } : {}),
        ...(options.headers ? { headers: options.headers } : {}),
      },
      this.nowMs(),
    );
    return { partition: record.partition, offset: record.offset };
  }
}

/** A record read from an output topic, its value decoded. */
export interface TestRecord<T> {
  readonly key: string | null;
  readonly value: T;
  readonly headers: Headers;
  readonly partition: number;
  readonly offset: number;
  readonly timestampMs: number;
}

/** Reads an output topic of the driver: each call returns the records appended since the last one. */
export class TestOutputTopic<T> {
  private read = 0;

  /** @internal */
  constructor(
    readonly name: string,
    private readonly log: MemoryLog,
    private readonly serde: Serde<T>,
  ) {}

  readRecordsToList(): TestRecord<T>[] {
    const records = this.log.appended(this.name, this.read);
    this.read += records.length;
    return records.map((r) => ({
      key: r.key,
      value: r.value === null ? (null as T) : this.serde.deserialize(r.value),
      headers: r.headers,
      partition: r.partition,
      offset: r.offset,
      timestampMs: r.timestampMs,
    }));
  }

  readValuesToList(): T[] {
    return this.readRecordsToList().map((r) => r.value);
  }
}
