/**
 * Small client commands for trying a topology on the local cluster: create a
 * topic, produce keyed lines from a file, read a topic from its start. They
 * use the same Kafka client as orderly (@confluentinc/kafka-javascript), with
 * Kafka's default partitioner, so a key lands where any other client puts it.
 *
 *     npm run kafka -- topic create disputes --partitions 3 [--bootstrap H:P]
 *     npm run kafka -- produce disputes FILE [--bootstrap H:P]     (lines: KEY<TAB>VALUE)
 *     npm run kafka -- consume TOPIC --count N [--timeout S] [--bootstrap H:P]
 */
import rdkafka, { type Message } from "@confluentinc/kafka-javascript";
import { readFileSync } from "node:fs";
import { BrokerError } from "./layout.js";

/** Creates `topic` with `partitions` partitions and one replica per node up to 3; an existing topic is only reported. */
export async function createTopic(bootstrap: string, topic: string, partitions: number, replicas: number): Promise<string> {
  const existing = await partitionCount(bootstrap, topic);
  if (existing > 0) return `topic ${topic} exists (${existing} partitions)`;
  const admin = rdkafka.AdminClient.create({ "bootstrap.servers": bootstrap });
  try {
    await new Promise<void>((resolve, reject) =>
      admin.createTopic({ topic, num_partitions: partitions, replication_factor: replicas }, 30_000, (error) =>
        error ? reject(new BrokerError(`creating topic ${topic} on ${bootstrap}: ${error.message}`)) : resolve(),
      ),
    );
  } finally {
    admin.disconnect();
  }
  return `created topic ${topic} (${partitions} partitions)`;
}

/** One record of a produce file: `KEY<TAB>VALUE`; a line without a tab has no key. Blank lines and `#` lines are skipped. */
export function parseLines(text: string, file: string): Array<{ key: string | null; value: string }> {
  return text.split("\n").flatMap((line, index) => {
    if (line.trim() === "" || line.startsWith("#")) return [];
    const tab = line.indexOf("\t");
    if (tab === 0) throw new BrokerError(`${file}:${index + 1}: the key before the tab is empty; write KEY<TAB>VALUE, or VALUE alone for no key`);
    return [tab < 0 ? { key: null, value: line } : { key: line.slice(0, tab), value: line.slice(tab + 1) }];
  });
}

/** Produces every line of `file` to `topic` in order and waits until the broker acknowledged them all. */
export async function produceFile(bootstrap: string, topic: string, file: string): Promise<string> {
  const records = parseLines(readFileSync(file, "utf8"), file);
  if ((await partitionCount(bootstrap, topic)) === 0) {
    throw new BrokerError(`topic ${topic} does not exist on ${bootstrap}; create it first: npm run kafka -- topic create ${topic} --partitions 3`);
  }
  await produceRecords(bootstrap, topic, records);
  return `produced ${records.length} records to ${topic}`;
}

/** A record to produce; without a partition, Kafka's default partitioner places it by its key. */
export interface ProducedRecord {
  readonly key: string | null;
  readonly value: string | Buffer;
  readonly partition?: number;
}

/** Writes the records in order with an idempotent producer and waits for every acknowledgement. */
export async function produceRecords(bootstrap: string, topic: string, records: readonly ProducedRecord[]): Promise<void> {
  const producer = new rdkafka.Producer({
    "bootstrap.servers": bootstrap,
    "enable.idempotence": true,
    partitioner: "murmur2_random",
    dr_cb: true,
  });
  await new Promise<void>((resolve, reject) => producer.connect({}, (error) => (error ? reject(error) : resolve())));
  producer.setPollInBackground(true);
  try {
    let pending = records.length;
    let failure: Error | undefined;
    const delivered = new Promise<void>((resolve, reject) => {
      producer.on("delivery-report", (error) => {
        if (error) failure ??= new BrokerError(`delivery to ${topic} failed: ${error.message}`);
        if (--pending > 0) return;
        if (failure) reject(failure);
        else resolve();
      });
    });
    for (const r of records) producer.produce(topic, r.partition ?? -1, typeof r.value === "string" ? Buffer.from(r.value) : r.value, r.key, null);
    if (records.length > 0) await delivered;
  } finally {
    await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
  }
}

/**
 * Reads `topic` from the start of every partition, with no consumer group, and prints each record
 * as `KEY<TAB>VALUE` until `count` were printed. Fails after `timeoutSeconds` with fewer.
 */
export async function consumeTopic(bootstrap: string, topic: string, count: number, timeoutSeconds: number, print: (line: string) => void): Promise<void> {
  const deadline = Date.now() + timeoutSeconds * 1000;
  let partitions: number;
  while ((partitions = await partitionCount(bootstrap, topic)) === 0) {
    if (Date.now() > deadline) throw new BrokerError(`topic ${topic} does not exist on ${bootstrap} (waited ${timeoutSeconds} s)`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const consumer = new rdkafka.KafkaConsumer({ "bootstrap.servers": bootstrap, "group.id": "orderly-tools-reader", "enable.auto.commit": false }, {});
  await new Promise<void>((resolve, reject) => consumer.connect({}, (error) => (error ? reject(error) : resolve())));
  consumer.assign(Array.from({ length: partitions }, (_, partition) => ({ topic, partition, offset: 0 })));
  let printed = 0;
  try {
    while (printed < count) {
      if (Date.now() > deadline) throw new BrokerError(`read ${printed} of ${count} records from ${topic} in ${timeoutSeconds} s`);
      const batch = await new Promise<Message[]>((resolve, reject) => consumer.consume(100, (error, messages) => (error ? reject(error) : resolve(messages))));
      for (const m of batch.slice(0, count - printed)) print(`${m.key?.toString() ?? ""}\t${m.value?.toString() ?? ""}`);
      printed += Math.min(batch.length, count - printed);
    }
  } finally {
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  }
}

/** Partitions of `topic`, 0 when it does not exist. */
async function partitionCount(bootstrap: string, topic: string): Promise<number> {
  const admin = rdkafka.AdminClient.create({ "bootstrap.servers": bootstrap });
  try {
    return await new Promise<number>((resolve, reject) =>
      admin.describeTopics([topic], { timeout: 10_000 }, (error, result) => {
        if (error) reject(new BrokerError(`cannot describe topic ${topic} on ${bootstrap}: ${error.message}; is the broker up (npm run kafka -- status)?`));
        else resolve(result[0]?.error ? 0 : (result[0]?.partitions.length ?? 0));
      }),
    );
  } finally {
    admin.disconnect();
  }
}
