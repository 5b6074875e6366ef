import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { pino, type Logger } from 'pino';
import type { Topology } from '../dsl/topology.js';
import { combineObservers } from '../engine/combineObservers.js';
import { Engine, type CommitPolicy, type StopOptions } from '../engine/engine.js';
import { Outcome, type EngineObserver, type OutcomeEvent } from '../engine/outcomes.js';
import type { Store } from '../ports/store.js';
import { topologyStores } from '../graph/stores.js';
import { openLevelStore } from '../state/levelStore.js';
import { checkBootstrap } from './bootstrapCheck.js';
import { ChangelogReader } from './changelog/changelogReader.js';
import { checkedChangelogTopic } from './changelog/changelogRecords.js';
import { ChangelogStore, type RestoreReport } from './changelog/changelogStore.js';
import { KAFKA_MAX_BUFFERED_PER_PARTITION, type KafkaSettings, type TransactionSettings } from './kafkaConfig.js';
import { KafkaLog } from './log/kafkaLog.js';
import { startResolutions, type Resolutions } from './parked/resolutions.js';
import { systemClock } from './systemClock.js';
import { systemRandom } from './systemRandom.js';
import { RateLimitWarnings, type RateLimitWarningOptions } from './rateLimitWarnings.js';
import { ensureTopics } from './topics.js';

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
   * Unfinished events per partition before it is paused (resumed at half). Half again the
   * engine's default, because a pause drops librdkafka's read-ahead: see {@link KAFKA_MAX_BUFFERED_PER_PARTITION}.
   * @defaultValue 1500
   */
  readonly maxBufferedPerPartition?: number;
  /**
   * The longest commit metadata (the finished offsets above the committed one, skipped after a
   * restart or a rebalance): below the broker's `offset.metadata.max.bytes` (the client adds a NUL byte); 0 commits offsets
   * alone. See docs/delivery.md. @defaultValue 4095
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
  /** Hears how the state of each partition this worker takes over was restored from its changelogs. */
  readonly onRestored?: (report: RestoreReport) => void;
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

/** A running worker. */
export interface RunningTopology {
  readonly engine: Engine;
  /**
   * Settles when the worker has stopped: resolves after {@link RunningTopology.stop}, rejects
   * with the error after a fatal one (a store or Kafka failure; the worker stopped itself).
   */
  readonly done: Promise<void>;
  /**
   * Stops taking new work, lets the work in flight run on for `graceMs` (default 0), then gives
   * up what is left (model calls and waits are aborted; those events are redone by the
   * partitions' next owner, their effects still once), commits the finished prefix, leaves the
   * group and closes the state. Idempotent: a second call returns the first one's promise.
   */
  stop(options?: StopOptions): Promise<void>;
}

/**
 * Runs a topology on a Kafka cluster: checks that `bootstrap` is well formed and answers (throws a
 * `BootstrapError` naming the address and the cause within seconds otherwise), checks the source topic and creates the missing output,
 * parking, dead-letter and changelog topics, opens the LevelDB state, joins the consumer group and
 * runs the engine until {@link RunningTopology.stop} or a fatal error. The state of each partition
 * is written to its stores' changelogs and restored from them when this worker takes it over.
 *
 * @example
 * const worker = await runTopology({ topology, bootstrap: 'localhost:9092', group: 'disputes', stateDir: './state' });
 * process.once('SIGTERM', () => void worker.stop());
 * await worker.done;
 */
export async function runTopology(options: RunTopologyOptions): Promise<RunningTopology> {
  const logger = options.logger ?? pino({ level: process.env.ORDERLY_LOG_LEVEL ?? 'info' });
  const { topology } = options;
  const settings: KafkaSettings = { ...options.kafka, bootstrap: options.bootstrap, group: options.group };
  // Before any client starts: librdkafka would say nothing for 30 s, then only `Local: Timed out`.
  await checkBootstrap(options.bootstrap);
  const stores = topologyStores(topology.nodes);
  // Checked before anything is created: a store whose changelog name Kafka refuses stops here.
  const changelogs = stores.map((s) => checkedChangelogTopic(options.group, s.name));
  await ensureTopics(settings, logger, { source: topology.source.topic, outputs: topology.outputTopics, changelogs });
  await mkdir(options.stateDir, { recursive: true });
  const local = await openLevelStore(options.stateDir);
  let source: ChangelogReader;
  try {
    source = await ChangelogReader.connect(settings, logger.child({ component: 'changelog' }));
  } catch (error) {
    await closeStore(local, logger);
    throw error;
  }

  let resolveDone!: () => void;
  let rejectDone!: (error: Error) => void;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  // A caller that only awaits stop() must not see an unhandled rejection.
  done.catch(() => undefined);

  let stopping: Promise<void> | undefined;
  let failure: Error | undefined;
  let resolutions: Resolutions | undefined;
  const stopWith = (error?: Error, graceMs = 0): Promise<void> => {
    if (error && !failure) failure = error;
    stopping ??= (async () => {
      rateLimits.stop();
      try {
        await resolutions?.stop();
        await engine.stop({ graceMs });
      } catch (stopError) {
        failure ??= stopError as Error;
      }
      await closeStore(store, logger);
      logger.info({ metrics: engine.metrics() }, failure ? 'worker stopped after a fatal error' : 'worker stopped');
      if (failure) rejectDone(failure);
      else resolveDone();
    })();
    return stopping;
  };

  const exactlyOnce = options.exactlyOnce ? transactionSettings(options, options.exactlyOnce === true ? {} : options.exactlyOnce) : undefined;
  const log = new KafkaLog({
    settings,
    logger: logger.child({ component: 'kafka' }),
    ...(exactlyOnce ? { exactlyOnce } : {}),
  });
  const commit = options.commit ?? (exactlyOnce ? { everyMs: 100 } : undefined);
  // Every state write goes to its changelog through the outputs' producer; each partition's state
  // is restored from its changelogs when this worker takes the partition over.
  const store = new ChangelogStore({
    local,
    group: options.group,
    stores,
    produce: (records) => log.produce(records),
    source,
    logger: logger.child({ component: 'changelog' }),
    handedBackCleanly: (tp) => !log.isLost(tp),
    ...(options.onRestored ? { onRestored: options.onRestored } : {}),
  });
  const rateLimits = rateLimitWatch(logger.child({ component: 'engine' }), options.rateLimitWarnings);
  const engine = new Engine({
    topology,
    log,
    clock: systemClock,
    store,
    random: systemRandom,
    // The user's observer hears each report first, so it has the fatal error before the worker stops.
    observer: withUserObserver(
      options.observer,
      loggingObserver(logger.child({ component: 'engine' }), (error) => void stopWith(error), rateLimits),
    ),
    ...(commit ? { commit } : {}),
    maxBufferedPerPartition: options.maxBufferedPerPartition ?? KAFKA_MAX_BUFFERED_PER_PARTITION,
    ...(options.commitMetadataMaxBytes !== undefined ? { commitMetadataMaxBytes: options.commitMetadataMaxBytes } : {}),
  });
  try {
    await engine.start();
  } catch (error) {
    rateLimits.stop();
    await log.close().catch(() => undefined);
    await closeStore(store, logger);
    throw error;
  }
  if (topology.park) {
    // `orderly parked resolve|replay` reach the owner of a parked key through the control topic.
    const owns = (partition: number) => log.owned().some((tp) => tp.topic === topology.source.topic && tp.partition === partition);
    resolutions = await startResolutions({ settings, topology, engine, owns, logger: logger.child({ component: 'resolutions' }) }).catch(
      async (error: unknown) => {
        await stopWith(error as Error);
        throw error;
      },
    );
    // A fatal error may have stopped the worker while they started: stop them too.
    if (stopping) await resolutions.stop();
  }
  logger.info(
    {
      source: topology.source.topic,
      outputs: topology.outputTopics,
      group: options.group,
      stateDir: options.stateDir,
      exactlyOnce: exactlyOnce?.transactionalId ?? false,
    },
    'worker started',
  );
  const stop = (stopOptions: StopOptions = {}): Promise<void> => {
    const graceMs = stopOptions.graceMs ?? 0;
    // Checked before anything stops: a bad grace must not leave a half-stopped worker.
    if (!Number.isFinite(graceMs) || graceMs < 0) return Promise.reject(new RangeError(`stop: graceMs must be 0 or more milliseconds, got ${graceMs}`));
    return stopWith(undefined, graceMs);
  };
  return { engine, done, stop };
}

function transactionSettings(options: RunTopologyOptions, eos: ExactlyOnceOptions): TransactionSettings {
  const timeoutMs = eos.transactionTimeoutMs ?? 10_000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1_000) {
    throw new RangeError(
      `runTopology: exactlyOnce.transactionTimeoutMs must be a whole number of at least 1000, got ${JSON.stringify(eos.transactionTimeoutMs)}`,
    );
  }
  const where = createHash('sha256')
    .update(`${hostname()}:${resolve(options.stateDir)}`)
    .digest('hex')
    .slice(0, 12);
  return { transactionalId: eos.transactionalId ?? `orderly-${options.group}-${where}`, timeoutMs };
}

async function closeStore(store: Store, logger: Logger): Promise<void> {
  try {
    await store.close();
  } catch (error) {
    logger.warn({ err: error }, 'closing the state store failed');
  }
}

interface RateLimitWatch {
  readonly warnings: RateLimitWarnings;
  stop(): void;
}

/** Warns at the default level while an agent step of the topology stays refused by its provider. */
function rateLimitWatch(logger: Logger, options: RateLimitWarningOptions | undefined): RateLimitWatch {
  const warnings = new RateLimitWarnings(
    (state) =>
      logger.warn(
        state,
        `agentStep '${state.step}' has been rate-limited for ${Math.round(state.forMs / 1000)} s: ${state.refusals} calls refused (429) since ${new Date(state.sinceMs).toISOString()}, none answered; ` +
          "its events wait in order. Check the provider's quota and key, or lower the step's limit.calls",
      ),
    options,
  );
  // A long Retry-After means no call ends for a while: look at the time on a timer too.
  const timer = setInterval(() => warnings.check(Date.now()), 5_000);
  timer.unref();
  return { warnings, stop: () => clearInterval(timer) };
}

const loud: ReadonlySet<Outcome> = new Set<Outcome>([Outcome.PARKED, Outcome.DEAD_LETTERED, Outcome.SKIPPED]);

/** The user's observer, then the worker's own; the worker's alone when the user gave none. */
function withUserObserver(user: EngineObserver | undefined, own: EngineObserver): EngineObserver {
  return user ? combineObservers(user, own) : own;
}

/** Logs outcomes (debug; PARKED, DEAD_LETTERED and SKIPPED at warn), commits (debug) and fatal errors. */
function loggingObserver(logger: Logger, onFatal: (error: Error) => void, rateLimits: RateLimitWatch): EngineObserver {
  return {
    outcome(event: OutcomeEvent) {
      if (loud.has(event.outcome)) logger.warn(event, `event ${event.outcome}`);
      else logger.debug(event, `event ${event.outcome}`);
    },
    modelCallEnded(call) {
      rateLimits.warnings.callEnded(call);
    },
    committed(commit) {
      logger.debug(commit, 'committed');
    },
    resumed(resume) {
      if (resume.ignored) logger.warn(resume, `commit metadata ignored: ${resume.ignored}; its offsets are redelivered`);
      else if (resume.finishedAbove > 0) logger.info(resume, 'finished offsets above the committed one: skipped when redelivered');
    },
    // A refused commit: the Kafka log has logged it at warn already.
    fatal(error) {
      logger.error({ err: error }, 'engine failed');
      onFatal(error);
    },
  };
}
