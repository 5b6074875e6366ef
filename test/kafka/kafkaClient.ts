// Plain Kafka clients for the tests: create topics, write inputs, read whole topics. They use
// librdkafka directly, not orderly's Log adapter, so what they see is what the broker holds.
import rdkafka, { type Message } from '@confluentinc/kafka-javascript';
import { setTimeout as sleep } from 'node:timers/promises';
import { produceRecords } from '../../tools/kafka/topicCommands.js';

export interface ReadRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly value: string | null;
  readonly headers: Record<string, string>;
}

export interface InputRecord {
  readonly key: string | null;
  readonly value: string | Buffer;
  readonly partition?: number;
}

/** Creates a topic; one replica unless `replicas` (and topic `config`, e.g. min.insync.replicas) are given. */
export async function createTopic(bootstrap: string, topic: string, partitions: number, replicas = 1, config: Record<string, string> = {}): Promise<void> {
  const admin = rdkafka.AdminClient.create({ 'bootstrap.servers': bootstrap });
  try {
    await new Promise<void>((resolve, reject) =>
      admin.createTopic({ topic, num_partitions: partitions, replication_factor: replicas, config }, 30_000, (error) =>
        error ? reject(new Error(`creating ${topic}: ${error.message}`)) : resolve(),
      ),
    );
  } finally {
    admin.disconnect();
  }
}

/** Writes the records in order (the producer keeps order per partition) and waits for the acks. */
export const produce: (bootstrap: string, topic: string, records: readonly InputRecord[]) => Promise<void> = produceRecords;

/** Each partition's leader and replicas (broker ids) of `topic`. */
export async function partitionReplicas(
  bootstrap: string,
  topic: string,
): Promise<Array<{ partition: number; leader: number; replicas: number[]; isr: number[] }>> {
  const admin = rdkafka.AdminClient.create({ 'bootstrap.servers': bootstrap });
  try {
    return await new Promise((resolve, reject) =>
      admin.describeTopics([topic], { timeout: 10_000 }, (error, result) => {
        if (error) reject(error);
        else if (result[0]?.error) reject(new Error(`describing ${topic}: ${result[0].error.message}`));
        else
          resolve(
            result[0]!.partitions.map((p) => ({
              partition: p.partition,
              leader: p.leader?.id ?? -1,
              replicas: p.replicas.map((r) => r.id),
              isr: p.isr.map((r) => r.id),
            })),
          );
      }),
    );
  } finally {
    admin.disconnect();
  }
}

/** The number of partitions of `topic`, or 0 when it does not exist. */
async function partitionCount(bootstrap: string, topic: string): Promise<number> {
  const admin = rdkafka.AdminClient.create({ 'bootstrap.servers': bootstrap });
  try {
    return await new Promise<number>((resolve, reject) =>
      admin.describeTopics([topic], { timeout: 10_000 }, (error, result) => {
        if (error) reject(error);
        else resolve(result[0]?.error ? 0 : (result[0]?.partitions.length ?? 0));
      }),
    );
  } finally {
    admin.disconnect();
  }
}

function toRead(m: Message): ReadRecord {
  const headers: Record<string, string> = {};
  for (const h of m.headers ?? []) for (const [k, v] of Object.entries(h)) headers[k] = v.toString();
  return {
    topic: m.topic,
    partition: m.partition,
    offset: m.offset,
    key: m.key === null || m.key === undefined ? null : m.key.toString(),
    value: m.value === null ? null : m.value.toString(),
    headers,
  };
}

/**
 * Reads `topic` from the beginning of every partition (no consumer group) until `done(records)`
 * holds, and returns every record read. Throws after `timeoutMs` with `describe(records)`.
 */
export async function readUntil(
  bootstrap: string,
  topic: string,
  done: (records: readonly ReadRecord[]) => boolean,
  options: { timeoutMs: number; describe: (records: readonly ReadRecord[]) => string },
): Promise<ReadRecord[]> {
  const deadline = Date.now() + options.timeoutMs;
  let partitions: number;
  // A describe that fails (a broker just went down) counts as not there yet.
  while ((partitions = await partitionCount(bootstrap, topic).catch(() => 0)) === 0) {
    if (Date.now() > deadline) throw new Error(`topic ${topic} was never created (waited ${options.timeoutMs} ms)`);
    await sleep(250);
  }
  const consumer = new rdkafka.KafkaConsumer({ 'bootstrap.servers': bootstrap, 'group.id': 'test-reader', 'enable.auto.commit': false }, {});
  await new Promise<void>((resolve, reject) => consumer.connect({}, (error) => (error ? reject(error) : resolve())));
  consumer.setDefaultConsumeTimeout(200);
  consumer.assign(Array.from({ length: partitions }, (_, partition) => ({ topic, partition, offset: 0 })));
  const records: ReadRecord[] = [];
  try {
    for (;;) {
      const batch = await new Promise<Message[]>((resolve, reject) => consumer.consume(500, (error, messages) => (error ? reject(error) : resolve(messages))));
      records.push(...batch.map(toRead));
      if (done(records)) return records;
      if (Date.now() > deadline) throw new Error(`${topic} after ${options.timeoutMs} ms: ${options.describe(records)}`);
    }
  } finally {
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  }
}

/** Reads every record now on `topic` (until a poll finds nothing new). */
export async function readAll(bootstrap: string, topic: string, quietMs = 1_500): Promise<ReadRecord[]> {
  let last = -1;
  let since = Date.now();
  return readUntil(
    bootstrap,
    topic,
    (records) => {
      if (records.length !== last) {
        last = records.length;
        since = Date.now();
        return false;
      }
      return Date.now() - since >= quietMs;
    },
    { timeoutMs: 120_000, describe: (records) => `still growing at ${records.length} records` },
  );
}

/** The offsets `group` has committed on each partition of `topic`, as the broker holds them (undefined: none). */
export async function committedOffsets(bootstrap: string, group: string, topic: string, partitions: number): Promise<Array<number | undefined>> {
  const consumer = new rdkafka.KafkaConsumer({ 'bootstrap.servers': bootstrap, 'group.id': group }, {});
  await new Promise<void>((resolve, reject) => consumer.connect({}, (error) => (error ? reject(error) : resolve())));
  try {
    const tps = Array.from({ length: partitions }, (_, partition) => ({ topic, partition }));
    const offsets = await new Promise<Array<{ partition: number; offset: number }>>((resolve, reject) =>
      consumer.committed(tps, 10_000, (error, result) => (error ? reject(error) : resolve(result))),
    );
    return tps.map((tp) => {
      const offset = offsets.find((o) => o.partition === tp.partition)?.offset;
      return offset === undefined || offset < 0 ? undefined : offset;
    });
  } finally {
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  }
}
