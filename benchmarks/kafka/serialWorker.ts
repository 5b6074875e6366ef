import rdkafka, { type Message } from '@confluentinc/kafka-javascript';
import { setTimeout as sleep } from 'node:timers/promises';
import { disputeSerde } from '../../examples/disputes/topology.js';
import { decisionProblems, standInDecision } from '../../testkit/scenarios/disputes.js';
import { Meter } from './meter.js';
import type { VariantResult, VariantSpec } from './spec.js';

/**
 * The worker as people usually write it with @confluentinc/kafka-javascript: consume one message,
 * await its handler (decode, decide, check the decision against its schema), commit its offset
 * synchronously, take the next. One message at a time, whatever its partition or key. Its end
 * point is the commit of the `events`-th message.
 */
export async function runSerialWorker(spec: VariantSpec): Promise<VariantResult> {
  const consumer = new rdkafka.KafkaConsumer(
    {
      'bootstrap.servers': spec.bootstrap,
      'group.id': spec.group,
      'client.id': 'orderly-bench-serial',
      'enable.auto.commit': false,
      'auto.offset.reset': 'earliest',
      'log.connection.close': false,
    },
    undefined,
  );
  await new Promise<void>((resolve, reject) => consumer.connect({}, (error) => (error ? reject(error) : resolve())));
  consumer.setDefaultConsumeTimeout(1_000);
  consumer.subscribe([spec.topic]);
  const handle = async (message: Message): Promise<void> => {
    const dispute = disputeSerde.deserialize(message.value!);
    if (spec.decideMs > 0) await sleep(spec.decideMs);
    const problems = decisionProblems(standInDecision(dispute));
    if (problems.length > 0) throw new Error(`serial worker: an invalid decision: ${problems.join('; ')}`);
  };
  let done = 0;
  const meter = new Meter(() => done);
  try {
    while (done < spec.events) {
      const [message] = await new Promise<Message[]>((resolve, reject) =>
        consumer.consume(1, (error, messages) => (error ? reject(error) : resolve(messages))),
      );
      if (!message) continue;
      meter.first();
      await handle(message);
      consumer.commitMessageSync(message);
      done += 1;
    }
    return meter.end();
  } finally {
    await new Promise<void>((resolve) => consumer.disconnect(() => resolve()));
  }
}
