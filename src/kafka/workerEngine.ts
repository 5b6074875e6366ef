import { Engine } from '../engine/engine.js';
import type { ChangelogStore } from './changelog/changelogStore.js';
import { closeState } from './changelog/workerState.js';
import type { KafkaLog } from './log/kafkaLog.js';
import { rateLimitWatch } from './rateLimitWarnings.js';
import { maxBufferedPerPartition, type CheckedRun } from './runOptions.js';
import { systemClock } from './systemClock.js';
import { systemRandom } from './systemRandom.js';
import { loggingObserver, withUserObserver } from './workerObserver.js';
import type { WorkerStop } from './workerStop.js';

/**
 * Builds the engine over the Kafka log, the changelog store and the system clock and random, and
 * starts it: it subscribes, and restores each partition it is assigned before its first record.
 * A fatal error reported by the engine stops the worker. A start that fails closes what it opened.
 */
export async function startEngine(run: CheckedRun, log: KafkaLog, store: ChangelogStore, worker: WorkerStop): Promise<Engine> {
  const logger = run.logger.child({ component: 'engine' });
  const rateLimits = rateLimitWatch(logger, run.options.rateLimitWarnings);
  const engine = new Engine({
    topology: run.topology,
    log,
    clock: systemClock,
    store,
    random: systemRandom,
    // The user's observer hears each report first, so it has the fatal error before the worker stops.
    observer: withUserObserver(
      run.options.observer,
      loggingObserver(logger, (error) => void worker.stop(error), rateLimits),
    ),
    ...(run.commit ? { commit: run.commit } : {}),
    maxBufferedPerPartition: maxBufferedPerPartition(run.options),
    ...(run.options.commitMetadataMaxBytes !== undefined ? { commitMetadataMaxBytes: run.options.commitMetadataMaxBytes } : {}),
    ...(run.options.effectRing === false ? { effectRing: false } : {}),
  });
  worker.running({ rateLimits, engine, store });
  try {
    await engine.start();
  } catch (error) {
    rateLimits.stop();
    await log.close().catch(() => undefined);
    await closeState(store, run.logger);
    throw error;
  }
  return engine;
}
