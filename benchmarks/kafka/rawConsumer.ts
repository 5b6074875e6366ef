import rdkafka, { type Message } from '@confluentinc/kafka-javascript';
import { totalOf } from './events.js';
import { Meter } from './meter.js';
import type { VariantResult, VariantSpec } from './spec.js';

/** The node-rdkafka-style consumer with the methods the typings leave out. */
type Consumer = rdkafka.KafkaConsumer & {
  setDefaultIsTimeoutOnlyForFirstMessage(value: boolean): void;
  commitCb(offsets: Array<{ topic: string; partition: number; offset: number }>, cb: (error: Error | null) => void): void;
};

/**
 * The ceiling: a plain consumer that only consumes (batches of up to 1,000) and commits (after
 * each batch, asynchronously; at the end, the end offsets, waiting for the broker). Its end point
 * is that last commit answered.
 */
export async function runRawConsumer(spec: VariantSpec): Promise<VariantResult> {
  const consumer = new rdkafka.KafkaConsumer(
    {
      'bootstrap.servers': spec.bootstrap,
      'group.id': spec.group,
      'client.id': 'orderly-bench-raw',
      'enable.auto.commit': false,
      'auto.offset.reset': 'earliest',
      'log.connection.close': false,
    },
    undefined,
  ) as Consumer;
  await new Promise<void>((resolve, reject) => consumer.connect({}, (error) => (error ? reject(error) : resolve())));
  consumer.setDefaultConsumeTimeout(100);
  consumer.setDefaultIsTimeoutOnlyForFirstMessage(true);
  consumer.subscribe([spec.topic]);
  const total = totalOf(spec.ends);
  let consumed = 0;
  let bytes = 0;
  const meter = new Meter(() => consumed);
  try {
    while (consumed < total) {
      const batch = await new Promise<Message[]>((resolve, reject) =>
        consumer.consume(1_000, (error, messages) => (error ? reject(error) : resolve(messages))),
      );
      if (batch.length === 0) continue;
      meter.first();
      consumed += batch.length;
      for (const message of batch) bytes += message.value?.length ?? 0;
      consumer.commit();
    }
    const offsets = spec.ends.map((offset, partition) => ({ topic: spec.topic, partition, offset }));
    await new Promise<void>((resolve, reject) => consumer.commitCb(offsets, (error) => (error ? reject(error) : resolve())));
    if (bytes === 0) throw new Error('raw consumer: every value was empty');
    return meter.end();
  } finally {
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  }
}
