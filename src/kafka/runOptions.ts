import { FORMAT_3_NOT_WRITTEN } from '../state/storedFormat.js';
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { pino, type Logger } from 'pino';
import type { Topology } from '../dsl/topology.js';
import type { CommitPolicy } from '../engine/engine.js';
import type { EngineObserver } from '../engine/outcomes.js';
import { topologyStores, type StateStore } from '../graph/stores.js';
import { checkBootstrap } from './bootstrapCheck.js';
import { checkedChangelogTopic } from './changelog/changelogRecords.js';
import type { RestoreReport } from './changelog/changelogStore.js';
import { checkUserProperties, KAFKA_MAX_BUFFERED_PER_PARTITION, type KafkaSettings, type TransactionSettings } from './kafkaConfig.js';
import type { KafkaLogOptions } from './log/kafkaLog.js';
import type { RateLimitWarningOptions } from './rateLimitWarnings.js';
import type { TopicPlan } from './topics.js';
import { shown } from '../graph/shown.js';

/** What {@link runTopology} needs: the topology, the cluster, the group and where the state lives. */
export interface RunTopologyOptions {
  readonly topology: Topology;
  /** Bootstrap servers, `host:port[,host:port...]`. */
  readonly bootstrap: string;
  /** The consumer group; every worker of one topology uses the same one. */
  readonly group: string;
  /** The LevelDB directory of this worker's state; one process at a time. Created when missing. */
  readonly stateDir: string;
  /** @defaultValue pino at info to stdout */
  readonly logger?: Logger;
  /** @defaultValue `{ everyMs: 5000 }` */
  readonly commit?: CommitPolicy;
  /**
   * Unfinished events per partition before it is paused (resumed at half); the log holds half as
   * many records of a paused partition before librdkafka pauses it: see {@link KAFKA_MAX_BUFFERED_PER_PARTITION}.
   * @defaultValue 1500
   */
  readonly maxBufferedPerPartition?: number;
  /**
   * The longest commit metadata (the finished offsets above the committed one, skipped after a
   * restart or a rebalance): below the broker's `offset.metadata.max.bytes` (the client adds a
   * NUL byte); 0 commits offsets alone. See docs/delivery.md. @defaultValue 4095
   */
  readonly commitMetadataMaxBytes?: number;
  /** More of the consumer group's and clients' settings (protocol, session timeout, librdkafka properties). */
  readonly kafka?: Omit<KafkaSettings, 'bootstrap' | 'group'>;
  /** Hears every outcome, model call, commit and fatal error, besides the log lines. */
  readonly observer?: EngineObserver;
  /**
   * Exactly-once: each commit is one Kafka transaction holding the outputs, parking and changelog
   * records and the input offsets, so a read_committed reader sees every output once. The commit
   * interval then defaults to 100 ms (each commit ends a transaction, and outputs are visible only then).
   */
  readonly exactlyOnce?: boolean | ExactlyOnceOptions;
  /**
   * Whether effect records go to their partitions' effect rings; false while workers of an orderly
   * without rings share the group (the first step of a rolling upgrade, docs/state.md).
   * @defaultValue true
   */
  readonly effectRing?: boolean;
  /** Hears how the state of each partition this worker takes over was restored from its changelogs. */
  readonly onRestored?: (report: RestoreReport) => void;
  /**
   * Topic settings of the changelog topics this worker creates (those missing), over orderly's
   * (`segment.ms` 60000, `min.cleanable.dirty.ratio` 0.1, `delete.retention.ms` 600000: see
   * docs/state.md, "Changelog topics"); `cleanup.policy` stays `compact`. Its `delete.retention.ms`
   * also bounds the age of a local checkpoint this worker restores from (half of it).
   */
  readonly changelogTopicConfig?: Readonly<Record<string, string>>;
  /**
   * The stored format this worker writes its changelogs in (docs/state.md, "Stored formats"). At 4
   * changelog records have no headers (the version is in the value), and a table row's changelog
   * record carries the effect records of its events: one changelog record per event instead of
   * two, and restores that read half as many records (docs/benchmarks.md, "Stored format 4"). 2:
   * what an orderly before format 4 reads; give it while workers of such an orderly share the
   * group (the first step of a rolling upgrade), as Kafka Streams' `upgrade.from`. @defaultValue 4
   */
  readonly storedFormat?: 2 | 4;
  /**
   * When a step refused by its provider (429) with no answer between is logged at warn: after
   * `afterMs` of refusals, then at most once every `everyMs`. @defaultValue `{ afterMs: 60000, everyMs: 60000 }`
   */
  readonly rateLimitWarnings?: RateLimitWarningOptions;
}

/** How an exactly-once worker names and times its transactions. */
export interface ExactlyOnceOptions {
  /**
   * Stable across this worker's restarts and unique in its group, so that a restarted worker
   * fences its crashed incarnation and aborts the transaction it left open.
   * @defaultValue `orderly-<group>-<hash of host and state directory>`
   */
  readonly transactionalId?: string;
  /** How long the broker keeps a transaction open before aborting it. @defaultValue 10000 (Kafka Streams' default under exactly-once) */
  readonly transactionTimeoutMs?: number;
}

/** A worker's options once checked, and what follows from them: the first step of {@link runTopology}. */
export interface CheckedRun {
  readonly options: RunTopologyOptions;
  readonly topology: Topology;
  readonly logger: Logger;
  readonly settings: KafkaSettings;
  readonly stores: readonly StateStore[];
  /** The topics to check and create. */
  readonly topics: TopicPlan;
  /** Exactly-once: the transactions' id and timeout; undefined: at-least-once. */
  readonly exactlyOnce: TransactionSettings | undefined;
  readonly log: KafkaLogOptions;
  readonly commit: CommitPolicy | undefined;
}

/**
 * Checks a worker's options before anything is opened or created: the transaction settings, that
 * `bootstrap` is well formed and answers (a `BootstrapError` naming the address and the cause
 * within seconds otherwise: librdkafka would say nothing for 30 s, then only `Local: Timed out`),
 * and that Kafka accepts the name of every store's changelog.
 */
export async function checkRunOptions(options: RunTopologyOptions): Promise<CheckedRun> {
  const logger = options.logger ?? pino({ level: process.env.ORDERLY_LOG_LEVEL ?? 'info' });
  const { topology } = options;
  const settings: KafkaSettings = { ...options.kafka, bootstrap: options.bootstrap, group: options.group };
  const exactlyOnce = options.exactlyOnce ? transactionSettings(options, options.exactlyOnce === true ? {} : options.exactlyOnce) : undefined;
  checkUserProperties(settings, exactlyOnce !== undefined);
  if ((options.storedFormat as number | undefined) === 3) throw new RangeError(`runTopology: storedFormat: ${FORMAT_3_NOT_WRITTEN}`);
  if (options.storedFormat !== undefined && options.storedFormat !== 2 && options.storedFormat !== 4) {
    throw new RangeError(`runTopology: storedFormat must be 2 or 4, got ${shown(options.storedFormat)}`);
  }
  await checkBootstrap(options.bootstrap);
  const stores = topologyStores(topology.nodes);
  const changelogs = stores.map((s) => checkedChangelogTopic(options.group, s.name));
  return {
    options,
    topology,
    logger,
    settings,
    stores,
    topics: {
      source: topology.source.topic,
      outputs: topology.outputTopics,
      changelogs,
      ...(options.changelogTopicConfig ? { changelogConfig: options.changelogTopicConfig } : {}),
    },
    exactlyOnce,
    log: {
      settings,
      logger: logger.child({ component: 'kafka' }),
      // Half what the engine buffers, what it takes at its resume: see KafkaLog.pause.
      maxHeldPerPartition: Math.max(1, Math.floor(maxBufferedPerPartition(options) / 2)),
      ...(exactlyOnce ? { exactlyOnce } : {}),
    },
    // Each commit ends a transaction, and outputs are visible only then.
    commit: options.commit ?? (exactlyOnce ? { everyMs: 100 } : undefined),
  };
}

/** The engine's bound on unfinished events per partition on Kafka (see {@link KAFKA_MAX_BUFFERED_PER_PARTITION}). */
export function maxBufferedPerPartition(options: Pick<RunTopologyOptions, 'maxBufferedPerPartition'>): number {
  return options.maxBufferedPerPartition ?? KAFKA_MAX_BUFFERED_PER_PARTITION;
}

function transactionSettings(options: RunTopologyOptions, eos: ExactlyOnceOptions): TransactionSettings {
  const timeoutMs = eos.transactionTimeoutMs ?? 10_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1_000) {
    throw new RangeError(`runTopology: exactlyOnce.transactionTimeoutMs must be a whole number of at least 1000, got ${shown(eos.transactionTimeoutMs)}`);
  }
  const where = createHash('sha256')
    .update(`${hostname()}:${resolve(options.stateDir)}`)
    .digest('hex')
    .slice(0, 12);
  return { transactionalId: eos.transactionalId ?? `orderly-${options.group}-${where}`, timeoutMs };
}
