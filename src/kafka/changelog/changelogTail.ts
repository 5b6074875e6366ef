import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KafkaSettings } from '../kafkaConfig.js';
import { ChangelogFold } from './changelogFold.js';
import { ChangelogReader, type ChangelogRange } from './changelogReader.js';

/**
 * A store's changelog read from the beginning, folded into the store's latest state, through the
 * same {@link ChangelogReader} that restores a worker's partitions (so both see the changelog
 * alike: read_committed, to each partition's end). `catchUp` reads to the end of every partition;
 * `poll` then reads what the owners wrote since (`orderly parked resolve` follows it while it waits).
 */
export class ChangelogTail {
  readonly fold = new ChangelogFold();
  /** The next offset to read, per partition. */
  private readonly next: Map<number, number>;

  private constructor(
    private readonly reader: ChangelogReader,
    readonly topic: string,
    partitions: readonly number[],
  ) {
    this.next = new Map(partitions.map((partition) => [partition, 0]));
  }

  /** Connects a reader of these partitions of the changelog; a read that makes no progress for `timeoutMs` throws. */
  static async open(settings: KafkaSettings, topic: string, partitions: readonly number[], logger: Logger, timeoutMs: number): Promise<ChangelogTail> {
    return new ChangelogTail(await ChangelogReader.connect(settings, logger, timeoutMs), topic, partitions);
  }

  /** Reads to the end of every partition. */
  async catchUp(): Promise<void> {
    await this.readToEnd();
  }

  /** Folds what has been written since; returns the state keys that changed (none: after waiting `timeoutMs`). */
  async poll(timeoutMs: number): Promise<string[]> {
    const changed = await this.readToEnd();
    if (changed.length === 0) await sleep(timeoutMs);
    return changed;
  }

  async close(): Promise<void> {
    await this.reader.close();
  }

  private async readToEnd(): Promise<string[]> {
    const ranges: ChangelogRange[] = [];
    for (const [partition, from] of this.next) {
      const { end } = await this.reader.ends({ topic: this.topic, partition });
      if (end > from) ranges.push({ topic: this.topic, partition, from, to: end });
    }
    const changed: string[] = [];
    await this.reader.read(ranges, async (messages) => {
      changed.push(...this.fold.apply(messages.map((m) => ({ ...m, topic: this.topic, partition: m.partition ?? -1, offset: m.offset ?? -1 }))));
    });
    for (const range of ranges) this.next.set(range.partition, range.to);
    return changed;
  }
}
