import type { TopicPartition } from '../ports/log.js';
import type { PartitionTask } from './partitionTask.js';

/**
 * The engine's partition tasks, found by topic and partition number: finding the task of each
 * record received builds no `topic/partition` string.
 */
export class PartitionTasks {
  private readonly byTopic = new Map<string, Array<PartitionTask | undefined>>();
  private count = 0;

  get(tp: TopicPartition): PartitionTask | undefined {
    return this.byTopic.get(tp.topic)?.[tp.partition];
  }

  set(tp: TopicPartition, task: PartitionTask): void {
    let partitions = this.byTopic.get(tp.topic);
    if (!partitions) this.byTopic.set(tp.topic, (partitions = []));
    if (partitions[tp.partition] === undefined) this.count += 1;
    partitions[tp.partition] = task;
  }

  delete(tp: TopicPartition): void {
    const partitions = this.byTopic.get(tp.topic);
    if (partitions?.[tp.partition] === undefined) return;
    partitions[tp.partition] = undefined;
    this.count -= 1;
  }

  get size(): number {
    return this.count;
  }

  /** Every task, by topic, then by partition number. */
  *values(): IterableIterator<PartitionTask> {
    for (const partitions of this.byTopic.values()) for (const task of partitions) if (task) yield task;
  }
}
