import { ChangelogFold } from '../parked/parkedChangelog.js';
import { MissingTopicError, TopicReader, type ReaderSettings } from '../log/topicReader.js';

/**
 * A store's changelog read from the beginning with no consumer group, folded into the store's
 * latest state. `catchUp` reads to the end of every partition; `poll` then follows what the
 * owners write next. (The worker's restore reads ranges with `changelog/changelogReader.ts`;
 * this one keeps following, which `orderly parked resolve` needs while it waits.)
 */
export class ChangelogTail {
  readonly fold = new ChangelogFold();

  private constructor(private readonly reader: TopicReader) {}

  /** Opens the changelog; a missing topic is a {@link MissingTopicError}. */
  static async open(settings: ReaderSettings, topic: string, partitions?: readonly number[]): Promise<ChangelogTail> {
    const reader = await TopicReader.open({ settings, topic, role: 'changelog', ...(partitions ? { partitions } : {}) });
    return new ChangelogTail(reader);
  }

  get topic(): string {
    return this.reader.topic;
  }

  /** Reads to the end of every partition. */
  async catchUp(timeoutMs: number): Promise<void> {
    await this.reader.catchUp(timeoutMs, (records) => this.fold.apply(records));
  }

  /** Folds what has been written since; returns the state keys that changed. */
  async poll(timeoutMs: number): Promise<string[]> {
    return this.fold.apply(await this.reader.poll(timeoutMs));
  }

  async close(): Promise<void> {
    await this.reader.close();
  }
}

export { MissingTopicError };
