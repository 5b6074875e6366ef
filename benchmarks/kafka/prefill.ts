import rdkafka from '@confluentinc/kafka-javascript';
import { setImmediate as yieldToLoop, setTimeout as sleep } from 'node:timers/promises';
import type { Progress } from '../progress.js';
import { benchEvent, totalOf, type EndOffsets } from './events.js';

const QUEUE_FULL = -184;

/** A topic to create and fill with the first `events` benchmark events. */
export interface PrefillPlan {
  readonly topic: string;
  readonly events: number;
  /** Append events `from`..`from + events - 1` to the topic, which holds the `from` before them (the soak's stages); absent: create it and write from 0. */
  readonly from?: number;
  readonly partitions: number;
  readonly keys: number;
}

/** Creates the topic (replication 1: the benchmark's broker has one node). */
export async function createTopic(bootstrap: string, topic: string, partitions: number): Promise<void> {
  const admin = rdkafka.AdminClient.create({ 'bootstrap.servers': bootstrap });
  try {
    await new Promise<void>((resolve, reject) =>
      admin.createTopic({ topic, num_partitions: partitions, replication_factor: 1 }, 30_000, (error) =>
        error ? reject(new Error(`bench: could not create topic ${topic} on ${bootstrap}: ${error.message}`)) : resolve(),
      ),
    );
  } finally {
    admin.disconnect();
  }
}

/** Deletes the benchmark's topics from a broker it did not start (its own broker is purged whole). */
export async function deleteTopics(bootstrap: string, topics: readonly string[]): Promise<void> {
  const admin = rdkafka.AdminClient.create({ 'bootstrap.servers': bootstrap });
  try {
    for (const topic of topics) await new Promise<void>((resolve) => admin.deleteTopic(topic, 30_000, () => resolve()));
  } finally {
    admin.disconnect();
  }
}

/**
 * A connected producer that writes as fast as it goes (no idempotence, leader acks, big batches),
 * for a benchmark's input; `config` adds to or overrides those settings.
 */
export async function connectBulkProducer(
  bootstrap: string,
  clientId: string,
  config: Partial<ConstructorParameters<typeof rdkafka.Producer>[0]> = {},
): Promise<rdkafka.Producer> {
  const producer = new rdkafka.Producer({
    'bootstrap.servers': bootstrap,
    'client.id': clientId,
    'enable.idempotence': false,
    'request.required.acks': 1,
    'linger.ms': 20,
    'batch.num.messages': 10_000,
    'queue.buffering.max.messages': 200_000,
    'log.connection.close': false,
    ...config,
  });
  await new Promise<void>((resolve, reject) => producer.connect({}, (error) => (error ? reject(error) : resolve())));
  producer.setPollInBackground(true);
  return producer;
}

/**
 * Creates the topic and writes events 0..events-1 keyed by account (or appends from `from`), with
 * the murmur2 partitioner (as orderly's producer), as fast as the producer goes: no idempotence,
 * leader acks, big batches. Returns each partition's end offset, read back from the broker, and
 * checks that every event is there.
 */
export async function prefill(bootstrap: string, plan: PrefillPlan, progress: Progress): Promise<EndOffsets> {
  const from = plan.from ?? 0;
  if (plan.from === undefined) await createTopic(bootstrap, plan.topic, plan.partitions);
  const producer = await connectBulkProducer(bootstrap, 'orderly-bench-prefill', { partitioner: 'murmur2_random' });
  const phase = progress.phase(`prefill ${plan.topic.split('.').pop()}`, plan.events, 'events');
  try {
    for (let i = from; i < from + plan.events; i++) {
      const event = benchEvent(i, plan.keys);
      const value = Buffer.from(JSON.stringify(event));
      for (;;) {
        try {
          producer.produce(plan.topic, -1, value, event.account, null);
          break;
        } catch (error) {
          if ((error as { code?: number }).code !== QUEUE_FULL) throw error;
          await sleep(5);
        }
      }
      if (i % 20_000 === 0) {
        phase.update(i - from);
        await yieldToLoop();
      }
    }
    await new Promise<void>((resolve, reject) => producer.flush(120_000, (error) => (error ? reject(error) : resolve())));
    const ends: number[] = [];
    for (let partition = 0; partition < plan.partitions; partition++) ends.push(await endOffset(producer, plan.topic, partition));
    if (totalOf(ends) !== from + plan.events)
      throw new Error(`bench: ${plan.topic} holds ${totalOf(ends)} events after the prefill, not ${from + plan.events}`);
    phase.finish(`${plan.events} events in ${plan.partitions} partitions`);
    return ends;
  } finally {
    await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
  }
}

/**
 * A partition's high watermark. Retried for a while: just after the topic is made, the broker may
 * answer "not leader" until its metadata settles.
 */
async function endOffset(producer: rdkafka.Producer, topic: string, partition: number): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await new Promise<number>((resolve, reject) =>
        producer.queryWatermarkOffsets(topic, partition, 10_000, (error, offsets) => (error ? reject(error) : resolve(offsets.highOffset))),
      );
    } catch (error) {
      if (attempt >= 20) throw new Error(`bench: could not read the end offset of ${topic}/${partition}: ${(error as Error).message}`, { cause: error });
      await sleep(250);
    }
  }
}
