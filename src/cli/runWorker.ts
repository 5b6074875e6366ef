import type { Command } from 'commander';
import { pino, type Logger } from 'pino';
import type { LibrdkafkaConfig } from '../kafka/kafkaConfig.js';
import { runTopology, type RunningTopology } from '../kafka/runner.js';
import type { Topology } from '../dsl/topology.js';
import type { EngineObserver } from '../engine/outcomes.js';
import { loadTopology } from './loadTopology.js';
import type { RunMetrics } from './runMetrics.js';
import { StopSignals } from './stopSignals.js';

// What `orderly run` does once its options are checked; loaded only when that command runs (it loads the native Kafka client).

/** The options of `orderly run`, as commander parses them. */
export interface RunOptions {
  bootstrap: string;
  group: string;
  stateDir: string;
  groupProtocol: 'classic' | 'consumer';
  sessionTimeoutMs?: number;
  instanceId?: string;
  commitEveryMs?: number;
  commitMetadataMaxBytes?: number;
  maxBuffered?: number;
  storedFormat?: 2 | 4;
  /** False with --no-effect-ring. */
  effectRing: boolean;
  stopGraceMs?: number;
  rateLimitWarnMs?: number;
  exactlyOnce?: boolean;
  transactionalId?: string;
  transactionTimeoutMs?: number;
  kafkaConfig: string[];
  consumerConfig: string[];
  producerConfig: string[];
  /** Set by the command: the flag, else ORDERLY_LOG_LEVEL, else info. */
  logLevel?: string;
  metricsPort?: number;
  metricsHost: string;
}

/** Runs the topology that MODULE exports on Kafka until SIGINT or SIGTERM; a second signal exits at once. */
export async function runWorker(module: string, options: RunOptions, program: Command): Promise<void> {
  const logger = pino({ level: options.logLevel ?? 'info' }, pino.destination({ dest: 1, sync: true }));
  // Heard from before the start: the worker consumes before its start has ended.
  const signals = new StopSignals(options.stopGraceMs ?? 0, logger);
  let worker: RunningTopology;
  let metrics: RunMetrics | undefined;
  try {
    // Loaded only when asked for: prom-client is the exporter's alone.
    if (options.metricsPort !== undefined)
      metrics = await (await import('./runMetrics.js')).startRunMetrics({ port: options.metricsPort, host: options.metricsHost }, logger);
    const topology = await loadTopology(module);
    if (signals.asked) {
      // Stopped before it joined the group: there is nothing to give up or commit.
      signals.close();
      await metrics?.close();
      return;
    }
    worker = await startWorker(topology, options, logger, program, metrics?.observer);
    metrics?.watch(worker);
  } catch (error) {
    signals.close();
    await metrics?.close();
    // A missing topic, a locked state directory, an unreachable cluster, a module that is no topology.
    logger.error({ err: error }, 'orderly run: could not start');
    process.stderr.write(`orderly run: ${(error as Error).message.replace(/^orderly run: /, '')}\n`);
    process.exitCode = 1;
    return;
  }
  signals.started(worker);
  try {
    await worker.done;
  } catch (error) {
    logger.error({ err: error }, 'orderly run: stopped by a fatal error');
    // On stderr too, as a failed start is: stdout (the JSON log) is often a file nobody is watching.
    process.stderr.write(`orderly run: stopped by a fatal error: ${(error as Error).message}\n`);
    process.exitCode = 1;
  } finally {
    await metrics?.close();
    // Last: a signal while the metrics server closes must not end the process with the default action.
    signals.close();
  }
}

function startWorker(
  topology: Topology,
  options: RunOptions,
  logger: Logger,
  program: Command,
  observer: EngineObserver | undefined,
): Promise<RunningTopology> {
  return runTopology({
    topology,
    ...(observer ? { observer } : {}),
    bootstrap: options.bootstrap,
    group: options.group,
    stateDir: options.stateDir,
    logger,
    ...(options.commitEveryMs ? { commit: { everyMs: options.commitEveryMs } } : {}),
    ...(options.maxBuffered ? { maxBufferedPerPartition: options.maxBuffered } : {}),
    ...(options.storedFormat ? { storedFormat: options.storedFormat } : {}),
    ...(options.effectRing ? {} : { effectRing: false }),
    ...(options.commitMetadataMaxBytes !== undefined ? { commitMetadataMaxBytes: options.commitMetadataMaxBytes } : {}),
    ...(options.rateLimitWarnMs ? { rateLimitWarnings: { afterMs: options.rateLimitWarnMs, everyMs: options.rateLimitWarnMs } } : {}),
    ...(options.exactlyOnce
      ? {
          exactlyOnce: {
            ...(options.transactionalId ? { transactionalId: options.transactionalId } : {}),
            ...(options.transactionTimeoutMs ? { transactionTimeoutMs: options.transactionTimeoutMs } : {}),
          },
        }
      : {}),
    kafka: {
      groupProtocol: options.groupProtocol,
      ...(options.sessionTimeoutMs ? { sessionTimeoutMs: options.sessionTimeoutMs } : {}),
      ...(options.instanceId ? { groupInstanceId: options.instanceId } : {}),
      librdkafka: parseKafkaConfig(options.kafkaConfig, program),
      consumerConfig: parseKafkaConfig(options.consumerConfig, program),
      producerConfig: parseKafkaConfig(options.producerConfig, program),
    },
  });
}

function parseKafkaConfig(pairs: readonly string[], program: Command): LibrdkafkaConfig {
  const config: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) program.error(`orderly run: a librdkafka property needs key=value, got '${pair}'`);
    config[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return config;
}
