import { TopicReader } from '../../src/kafka/log/topicReader.js';
import type { ReadRecord } from './checkOutput.js';

const decoder = new TextDecoder();

/** Reads a whole topic from the start (no group), each partition in offset order, partitions one after another. */
export async function readTopic(bootstrap: string, topic: string, timeoutMs = 300_000): Promise<ReadRecord[]> {
  const reader = await TopicReader.open({ settings: { bootstrap, clientId: 'orderly-bench-peers' }, topic, role: 'bench-peers-check' });
  const byPartition = new Map<number, ReadRecord[]>();
  try {
    await reader.catchUp(timeoutMs, (records) => {
      for (const r of records) {
        let list = byPartition.get(r.partition);
        if (!list) byPartition.set(r.partition, (list = []));
        list.push({ partition: r.partition, offset: r.offset, key: r.key, value: r.value === null ? null : decoder.decode(r.value) });
      }
    });
  } finally {
    await reader.close();
  }
  return [...byPartition.keys()].sort((a, b) => a - b).flatMap((partition) => byPartition.get(partition)!);
}
