import rdkafka, { type IAdminClient, type LibrdKafkaError, type NewTopic, type TopicDescription } from '@confluentinc/kafka-javascript';
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { adminConfig, type KafkaSettings } from './kafkaConfig.js';

const UNKNOWN_TOPIC = 3;
const TOPIC_AUTHORIZATION_FAILED = 29;
const CLUSTER_AUTHORIZATION_FAILED = 31;
const TOPIC_ALREADY_EXISTS = 36;

/** A topic orderly needs that is missing and cannot be made, or cannot be seen; names the topic and what to grant. */
export class TopicError extends Error {
  constructor(
    readonly topic: string,
    message: string,
  ) {
    super(message);
    this.name = 'TopicError';
  }
}

export interface TopicPlan {
  /** The topic the topology reads: it must exist (orderly does not choose its partitions). */
  readonly source: string;
  /** Topics the topology writes (sinks, parking, dead letters): created when missing. */
  readonly outputs: readonly string[];
  /**
   * The stores' changelog topics: created when missing, compacted, with the source topic's
   * partition count (a changelog partition holds the state of the source partition of its number).
   */
  readonly changelogs?: readonly string[];
  /**
   * Topic settings of the changelog topics orderly creates, over {@link CHANGELOG_TOPIC_CONFIG}
   * (an existing topic is left as it is: change it with your tools).
   */
  readonly changelogConfig?: Readonly<Record<string, string>>;
  /** Partitions of a created topic. @defaultValue the source topic's count (co-partitioned by key) */
  readonly partitions?: number;
  /** @defaultValue -1: the broker's default.replication.factor */
  readonly replicationFactor?: number;
  readonly timeoutMs?: number;
}

/**
 * The settings of a changelog topic orderly creates, so that compaction bounds it (docs/state.md,
 * "Changelog topics"). Every event writes records that are soon overwritten or deleted (its
 * effect record is pruned once committed past), so a changelog holds little live state and much
 * that compaction can drop; but compaction never touches a partition's active segment, and with
 * Kafka's defaults (`segment.ms` 7 days, `segment.bytes` 1 GiB) a changelog would hold a week of
 * writes before the first cleaning.
 * - `segment.ms` 60000: the active segment rolls after a minute (at its next write), so at most
 *   about a minute of writes waits for compaction.
 * - `min.cleanable.dirty.ratio` 0.1: a partition is cleaned once a tenth of it is dirty (Kafka's
 *   default, half, lets a changelog grow to twice its live size).
 * - `delete.retention.ms` 600000: a tombstone stays ten minutes after the cleaning that first
 *   kept it, so a restore (seconds; it must finish within this or it may miss one) sees every
 *   delete, and a checkpoint stays usable five minutes (`checkpointMaxAgeMs`: a rolling restart);
 *   the tombstones, one per event at least, which every full restore reads, leave after ten
 *   minutes (Kafka's default is a day).
 */
export const CHANGELOG_TOPIC_CONFIG: Readonly<Record<string, string>> = Object.freeze({
  'cleanup.policy': 'compact',
  'segment.ms': '60000',
  'min.cleanable.dirty.ratio': '0.1',
  'delete.retention.ms': '600000',
});

/**
 * The oldest local checkpoint a worker restores from: half the `delete.retention.ms` of the
 * changelog topics it creates (orderly's, or `changelogConfig`'s), so that the read from it has the
 * other half to reach every tombstone written since (docs/state.md, "How long tombstones stay").
 * An existing topic keeps its own setting: give the same in `changelogConfig`.
 */
export function checkpointMaxAgeMs(changelogConfig?: Readonly<Record<string, string>>): number | undefined {
  const retentionMs = Number({ ...CHANGELOG_TOPIC_CONFIG, ...changelogConfig }['delete.retention.ms']);
  return Number.isFinite(retentionMs) && retentionMs >= 0 ? retentionMs / 2 : undefined;
}

/**
 * Checks that the source topic exists and creates the missing output topics. Fails with a
 * {@link TopicError} naming the topic and the permission (ACL) the principal lacks.
 *
 * @returns the source topic's partition count
 */
export async function ensureTopics(settings: KafkaSettings, logger: Logger, plan: TopicPlan): Promise<{ sourcePartitions: number }> {
  const admin = rdkafka.AdminClient.create(adminConfig(settings));
  const timeout = plan.timeoutMs ?? 30_000;
  try {
    const changelogs = plan.changelogs ?? [];
    const described = await describe(admin, [plan.source, ...plan.outputs, ...changelogs], timeout);
    const source = described.get(plan.source)!;
    if (source.error) throw describeError(plan.source, source.error, settings.bootstrap, 'source');
    const sourcePartitions = source.partitions.length;
    for (const topic of plan.outputs) {
      const found = described.get(topic)!;
      if (!found.error) continue;
      if (found.error.code !== UNKNOWN_TOPIC) throw describeError(topic, found.error, settings.bootstrap, 'output');
      const partitions = plan.partitions ?? sourcePartitions;
      await create(admin, topic, partitions, plan.replicationFactor ?? -1, timeout);
      logger.info({ topic, partitions }, 'created topic');
    }
    for (const topic of changelogs) {
      let found = described.get(topic)!;
      if (found.error) {
        if (found.error.code !== UNKNOWN_TOPIC) throw describeError(topic, found.error, settings.bootstrap, 'output');
        await create(admin, topic, sourcePartitions, plan.replicationFactor ?? -1, timeout, {
          ...CHANGELOG_TOPIC_CONFIG,
          ...plan.changelogConfig,
          'cleanup.policy': 'compact',
        });
        logger.info({ topic, partitions: sourcePartitions }, 'created changelog topic');
        // Described again once visible: "unknown" may have been a topic just created by another
        // worker (or by hand), whose partitions must match all the same.
        found = await describeWhenVisible(admin, topic, timeout);
      }
      if (found.partitions.length !== sourcePartitions) throw changelogMismatch(topic, found.partitions.length, plan.source, sourcePartitions);
    }
    return { sourcePartitions };
  } finally {
    admin.disconnect();
  }
}

function describe(admin: IAdminClient, topics: readonly string[], timeout: number): Promise<Map<string, TopicDescription>> {
  return new Promise((resolve, reject) => {
    admin.describeTopics([...new Set(topics)], { timeout }, (error, result) => {
      if (error) reject(new Error(`could not describe topics ${topics.join(', ')}: ${error.message}`));
      else resolve(new Map(result.map((t) => [t.name, t])));
    });
  });
}

/** Describes a topic until the broker answered for it (a created topic takes a moment to appear in the metadata). */
async function describeWhenVisible(admin: IAdminClient, topic: string, timeout: number): Promise<TopicDescription> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const found = (await describe(admin, [topic], timeout)).get(topic)!;
    if (!found.error) return found;
    if (found.error.code !== UNKNOWN_TOPIC) throw describeError(topic, found.error, '', 'output');
    if (Date.now() > deadline)
      throw new TopicError(topic, `topic '${topic}' was created but the cluster did not show it within ${timeout} ms; check the brokers' health`);
    await sleep(100);
  }
}

function create(
  admin: IAdminClient,
  topic: string,
  partitions: number,
  replicationFactor: number,
  timeout: number,
  config?: NewTopic['config'],
): Promise<void> {
  return new Promise((resolve, reject) => {
    admin.createTopic({ topic, num_partitions: partitions, replication_factor: replicationFactor, ...(config ? { config } : {}) }, timeout, (error) => {
      if (!error || error.code === TOPIC_ALREADY_EXISTS) resolve();
      else reject(createError(topic, error));
    });
  });
}

function describeError(topic: string, error: LibrdKafkaError, bootstrap: string, role: 'source' | 'output'): TopicError {
  if (error.code === TOPIC_AUTHORIZATION_FAILED) {
    const needs = role === 'source' ? 'DESCRIBE and READ' : 'DESCRIBE and WRITE';
    return new TopicError(topic, `topic '${topic}': not authorized to describe it; grant this principal ${needs} on Topic:${topic}`);
  }
  if (error.code === UNKNOWN_TOPIC) {
    return new TopicError(
      topic,
      `source topic '${topic}' does not exist on ${bootstrap}; create it first (orderly does not choose the partition count of its input)`,
    );
  }
  return new TopicError(topic, `topic '${topic}': ${error.message} (code ${error.code})`);
}

function createError(topic: string, error: LibrdKafkaError): TopicError {
  if (error.code === TOPIC_AUTHORIZATION_FAILED || error.code === CLUSTER_AUTHORIZATION_FAILED) {
    return new TopicError(
      topic,
      `topic '${topic}' is missing and this principal may not create it: grant CREATE on Topic:${topic} (or on the Cluster), or create the topic yourself`,
    );
  }
  return new TopicError(topic, `could not create topic '${topic}': ${error.message} (code ${error.code})`);
}

function changelogMismatch(topic: string, partitions: number, source: string, sourcePartitions: number): TopicError {
  return new TopicError(
    topic,
    `changelog topic '${topic}' has ${partitions} partitions but the source topic '${source}' has ${sourcePartitions}: ` +
      `changelog partition N holds the state of source partition N, so they must match; delete '${topic}' (its state is lost) ` +
      'or run this topology under another consumer group',
  );
}
