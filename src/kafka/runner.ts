import type { Engine } from '../engine/engine.js';
import type { StopOptions } from '../engine/engine.js';
import { changelogStoreOver, openState } from './changelog/workerState.js';
import { KafkaLog } from './log/kafkaLog.js';
import { startResolutions } from './parked/resolutions.js';
import { checkRunOptions, type CheckedRun, type RunTopologyOptions } from './runOptions.js';
import { checkpointMaxAgeMs, ensureTopics } from './topics.js';
import { startEngine } from './workerEngine.js';
import { WorkerStop } from './workerStop.js';

export type { ExactlyOnceOptions, RunTopologyOptions } from './runOptions.js';

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
  const run = await checkRunOptions(options);
  await ensureTopics(run.settings, run.logger, run.topics);
  const state = await openState(options.stateDir, run.settings, run.logger);
  const log = new KafkaLog(run.log);
  const store = changelogStoreOver(state, log, {
    group: options.group,
    stores: run.stores,
    logger: run.logger,
    onRestored: options.onRestored,
    checkpointMaxAgeMs: checkpointMaxAgeMs(options.changelogTopicConfig),
    storedFormat: options.storedFormat ?? 4,
  });
  const worker = new WorkerStop(run.logger);
  const engine = await startEngine(run, log, store, worker);
  await serveResolutions(run, engine, log, worker);
  logStarted(run);
  return { engine, done: worker.done, stop: (stopOptions) => worker.stopAsked(stopOptions) };
}

/**
 * With a park: `orderly parked resolve|replay` reach the owner of a parked key through the
 * control topic, which this worker reads for the partitions it owns.
 */
async function serveResolutions(run: CheckedRun, engine: Engine, log: KafkaLog, worker: WorkerStop): Promise<void> {
  const { topology } = run;
  if (!topology.park) return;
  const owns = (partition: number) => log.owned().some((tp) => tp.topic === topology.source.topic && tp.partition === partition);
  const resolutions = await startResolutions({ settings: run.settings, topology, engine, owns, logger: run.logger.child({ component: 'resolutions' }) }).catch(
    async (error: unknown) => {
      await worker.stop(error as Error);
      throw error;
    },
  );
  worker.serving(resolutions);
  // A fatal error may have stopped the worker while they started: stop them too.
  if (worker.stopping) await resolutions.stop();
}

function logStarted(run: CheckedRun): void {
  const { options } = run;
  run.logger.info(
    {
      source: run.topology.source.topic,
      outputs: run.topology.outputTopics,
      group: options.group,
      stateDir: options.stateDir,
      exactlyOnce: run.exactlyOnce?.transactionalId ?? false,
    },
    'worker started',
  );
}
