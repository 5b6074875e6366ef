// The stores' changelog topics on the real broker: created compacted, co-partitioned with the
// source, and refused when an existing one is not.
import rdkafka from '@confluentinc/kafka-javascript';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, inject, it } from 'vitest';
import { CHANGELOG_TOPIC_CONFIG, ensureTopics, TopicError } from '../../src/kafka/topics.js';
import { createTopic } from './kafkaClient.js';
import { scenario } from './disputes.js';
import { topicConfig, topicConfigs } from './topicConfig.js';
import { failureLog } from './failureLog.js';

const bootstrap = inject('kafkaBootstrap');
const logger = failureLog();

/** Partition counts of the topics, once the broker's metadata knows them all. */
async function partitionsOf(topics: readonly string[]): Promise<number[]> {
  const admin = rdkafka.AdminClient.create({ 'bootstrap.servers': bootstrap });
  try {
    for (let attempt = 0; ; attempt++) {
      const described = await new Promise<Array<{ name: string; partitions: unknown[]; error?: { message: string } }>>((resolve, reject) =>
        admin.describeTopics([...topics], { timeout: 10_000 }, (error, result) => (error ? reject(error) : resolve(result))),
      );
      const missing = described.filter((t) => t.error);
      if (missing.length === 0) return topics.map((topic) => described.find((t) => t.name === topic)!.partitions.length);
      if (attempt === 50) throw new Error(`not visible after 5 s: ${missing.map((t) => `${t.name} (${t.error!.message})`).join(', ')}`);
      await sleep(100);
    }
  } finally {
    admin.disconnect();
  }
}

describe('changelog topics', () => {
  it("are created compacted, with the source topic's partition count, once", async () => {
    const { prefix, group } = await scenario('changelog-topics');
    await createTopic(bootstrap, `${prefix}in`, 3);
    const changelogs = [`${group}-fx-changelog`, `${group}-hold-changelog`];
    const plan = { source: `${prefix}in`, outputs: [`${prefix}out`], changelogs };
    await ensureTopics({ bootstrap, group }, logger, plan);
    await ensureTopics({ bootstrap, group }, logger, plan);
    expect(await partitionsOf(changelogs)).toEqual([3, 3]);
    // Set so that compaction bounds them (docs/state.md, "Changelog topics").
    const settings = ['cleanup.policy', 'segment.ms', 'min.cleanable.dirty.ratio', 'delete.retention.ms'];
    expect(await topicConfigs(bootstrap, changelogs[0]!, settings)).toEqual({ ...CHANGELOG_TOPIC_CONFIG });
    expect(await topicConfig(bootstrap, `${prefix}out`, 'cleanup.policy'), 'outputs stay as the broker makes them').toBe('delete');
    // A worker's own settings go over orderly's, for the changelogs it creates; an existing one is left as it is.
    const own = `${group}-own-changelog`;
    await ensureTopics({ bootstrap, group }, logger, { ...plan, changelogs: [...changelogs, own], changelogConfig: { 'segment.ms': '600000' } });
    expect(await topicConfigs(bootstrap, own, settings)).toEqual({ ...CHANGELOG_TOPIC_CONFIG, 'segment.ms': '600000' });
  });

  it('refuses an existing changelog whose partitions do not match the source, naming it and the fix', async () => {
    const { prefix, group } = await scenario('changelog-mismatch');
    await createTopic(bootstrap, `${prefix}in`, 2);
    const changelog = `${group}-fx-changelog`;
    await createTopic(bootstrap, changelog, 1);
    await expect(ensureTopics({ bootstrap, group }, logger, { source: `${prefix}in`, outputs: [], changelogs: [changelog] })).rejects.toThrow(
      new TopicError(
        changelog,
        `changelog topic '${changelog}' has 1 partitions but the source topic '${prefix}in' has 2: changelog partition N holds the state of ` +
          `source partition N, so they must match; delete '${changelog}' (its state is lost) or run this topology under another consumer group`,
      ),
    );
  });
});
