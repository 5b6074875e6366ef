import { mkdir } from 'node:fs/promises';
import { pino, type Logger } from 'pino';
import type { Topology } from '../dsl/topology.js';
import { Engine, type CommitPolicy } from '../engine/engine.js';
import { Outcome, type EngineObserver, type OutcomeEvent } from '../engine/outcomes.js';
import type { Store } from '../ports/store.js';
import { openLevelStore } from '../state/levelStore.js';
import type { KafkaSettings } from './kafkaConfig.js';
import { KafkaLog } from './kafkaLog.js';
import { systemClock } from './systemClock.js';
import { systemRandom } from './systemRandom.js';
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
  /** Unfinished events per partition before it is paused. @defaultValue 1000 */
  readonly maxBufferedPerPartition?: number;
  /** More of the consumer group's and clients' settings (protocol, session timeout, librdkafka properties). */
  readonly kafka?: Omit<KafkaSettings, 'bootstrap' | 'group'>;
  /** Hears every outcome, model call, commit and fatal error, besides the log lines. */
  readonly observer?: EngineObserver;
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
   * Gives up the work in flight (model calls and waits are aborted; those events are redone by the
   * partitions' next owner, their effects still once), commits the finished prefix, leaves the
   * group and closes the state. Idempotent.
   */
  stop(): Promise<void>;
}

/**
 * Runs a topology on a Kafka cluster: checks the source topic and creates the missing output,
 * parking and dead-letter topics, opens the LevelDB state, joins the consumer group and runs the
 * engine until {@link RunningTopology.stop} or a fatal error.
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
  await ensureTopics(settings, logger, { source: topology.source.topic, outputs: topology.outputTopics });
  await mkdir(options.stateDir, { recursive: true });
  const store = await openLevelStore(options.stateDir);

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
  const stopWith = (error?: Error): Promise<void> => {
    if (error && !failure) failure = error;
    stopping ??= (async () => {
      try {
        await engine.stop();
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

  const log = new KafkaLog({
    settings,
    logger: logger.child({ component: 'kafka' }),
    onFatal: (error) => void stopWith(error),
  });
  const engine = new Engine({
    topology,
    log,
    clock: systemClock,
    store,
    random: systemRandom,
    observer: loggingObserver(logger.child({ component: 'engine' }), options.observer, (error) => void stopWith(error)),
    ...(options.commit ? { commit: options.commit } : {}),
    ...(options.maxBufferedPerPartition ? { maxBufferedPerPartition: options.maxBufferedPerPartition } : {}),
  });
  try {
    await engine.start();
  } catch (error) {
    await log.close().catch(() => undefined);
    await closeStore(store, logger);
    throw error;
  }
  logger.info({ source: topology.source.topic, outputs: topology.outputTopics, group: options.group, stateDir: options.stateDir }, 'worker started');
  return { engine, done, stop: () => stopWith() };
}

async function closeStore(store: Store, logger: Logger): Promise<void> {
  try {
    await store.close();
  } catch (error) {
    logger.warn({ err: error }, 'closing the state store failed');
  }
}

const loud: ReadonlySet<Outcome> = new Set<Outcome>([Outcome.PARKED, Outcome.DEAD_LETTERED]);

/** Logs outcomes (debug; PARKED and DEAD_LETTERED at warn), commits (debug) and fatal errors, then tells `user`. */
function loggingObserver(logger: Logger, user: EngineObserver | undefined, onFatal: (error: Error) => void): EngineObserver {
  return {
    outcome(event: OutcomeEvent) {
      if (loud.has(event.outcome)) logger.warn(event, `event ${event.outcome}`);
      else logger.debug(event, `event ${event.outcome}`);
      user?.outcome?.(event);
    },
    modelCall(call) {
      user?.modelCall?.(call);
    },
    committed(commit) {
      logger.debug(commit, 'committed');
      user?.committed?.(commit);
    },
    commitRefused(refusal) {
      // The Kafka log has logged it at warn already.
      user?.commitRefused?.(refusal);
    },
    fatal(error) {
      logger.error({ err: error }, 'engine failed');
      user?.fatal?.(error);
      onFatal(error);
    },
  };
}
