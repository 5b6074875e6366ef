import { InvalidArgumentError, type Command } from 'commander';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino, type Logger } from 'pino';
import type { Topology } from '../dsl/topology.js';
import type { EngineObserver } from '../engine/outcomes.js';
import type { LibrdkafkaConfig } from '../kafka/kafkaConfig.js';
import { runTopology, type RunningTopology } from '../kafka/runner.js';
import type { RunMetrics } from './runMetrics.js';

interface RunOptions {
  bootstrap: string;
  group: string;
  stateDir: string;
  groupProtocol: 'classic' | 'consumer';
  sessionTimeoutMs?: number;
  instanceId?: string;
  commitEveryMs?: number;
  maxBuffered?: number;
  stopGraceMs?: number;
  exactlyOnce?: boolean;
  transactionalId?: string;
  transactionTimeoutMs?: number;
  kafkaConfig: string[];
  consumerConfig: string[];
  producerConfig: string[];
  logLevel: string;
  metricsPort?: number;
  metricsHost: string;
}

/**
 * `orderly run MODULE --bootstrap HOST:PORT --group ID --state-dir DIR`: runs the topology that
 * MODULE exports by default on a Kafka cluster until SIGINT or SIGTERM.
 */
export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description('run the topology that MODULE exports by default on a Kafka cluster, until SIGINT or SIGTERM')
    .argument('<module>', 'a compiled .js (or .mjs) module whose default export is a Topology (or a function returning one); a .ts module works when the CLI runs under tsx')
    .requiredOption('--bootstrap <servers>', 'Kafka bootstrap servers, host:port[,host:port...]')
    .requiredOption('--group <id>', 'consumer group id, the same for every worker of this topology')
    .requiredOption('--state-dir <dir>', "this worker's LevelDB state directory (created when missing; one process at a time)")
    .option('--group-protocol <protocol>', 'classic (cooperative-sticky) or consumer (KIP-848)', 'classic')
    .option('--session-timeout-ms <ms>', 'classic protocol: how long a silent worker keeps its partitions', toInteger)
    .option('--instance-id <id>', 'static group membership: a restarted worker with the same id gets its partitions back without a rebalance')
    .option('--commit-every-ms <ms>', "commit each partition's finished prefix this often (default 5000)", toInteger)
    .option('--max-buffered <n>', 'unfinished events per partition before it is paused, resumed at half (default 1500)', toInteger)
    .option('--stop-grace-ms <ms>', 'on SIGINT or SIGTERM, how long the model calls in flight may finish before they are given up (default 0: at once; given-up events are redone by the next owner)', toMilliseconds)
    .option('--exactly-once', 'outputs, state changelogs and input offsets in one Kafka transaction per commit: a read_committed reader sees each output once (commits every 100 ms unless --commit-every-ms)')
    .option('--transactional-id <id>', "with --exactly-once: this worker's transactional id, stable across its restarts and unique in the group (default: derived from the group, the host and the state directory)")
    .option('--transaction-timeout-ms <ms>', 'with --exactly-once: how long the broker keeps a transaction open before aborting it (default 10000)', toInteger)
    .option('-X, --kafka-config <key=value>', 'a librdkafka property for every client, e.g. security.protocol=SSL (repeatable)', collect, [])
    .option('--consumer-config <key=value>', 'a librdkafka property of the consumer only, e.g. max.poll.interval.ms=600000 (repeatable)', collect, [])
    .option('--producer-config <key=value>', 'a librdkafka property of the producer only, e.g. linger.ms=20 (repeatable)', collect, [])
    .option('--metrics-port <port>', 'serve Prometheus metrics at http://HOST:PORT/metrics (0: any free port, logged at start)', toPort)
    .option('--metrics-host <host>', 'the address the metrics are served on', '127.0.0.1')
    .option('--log-level <level>', 'pino level: trace, debug, info, warn, error', process.env.ORDERLY_LOG_LEVEL ?? 'info')
    .action(async (module: string, options: RunOptions) => {
      if (!options.exactlyOnce && (options.transactionalId || options.transactionTimeoutMs)) {
        program.error('orderly run: --transactional-id and --transaction-timeout-ms need --exactly-once');
      }
      if (!['classic', 'consumer'].includes(options.groupProtocol)) {
        program.error(`orderly run: --group-protocol must be classic or consumer, got '${options.groupProtocol}'`);
      }
      const logger = pino({ level: options.logLevel }, pino.destination({ dest: 1, sync: true }));
      let worker: RunningTopology;
      let metrics: RunMetrics | undefined;
      try {
        // Loaded only when asked for: prom-client is the exporter's alone.
        if (options.metricsPort !== undefined) metrics = await (await import('./runMetrics.js')).startRunMetrics({ port: options.metricsPort, host: options.metricsHost }, logger);
        worker = await startWorker(module, options, logger, program, metrics?.observer);
        metrics?.watch(worker);
      } catch (error) {
        await metrics?.close();
        // A missing topic, a locked state directory, an unreachable cluster, a module that is no topology.
        logger.error({ err: error }, 'orderly run: could not start');
        process.stderr.write(`orderly run: ${(error as Error).message.replace(/^orderly run: /, '')}\n`);
        process.exitCode = 1;
        return;
      }
      let signals = 0;
      const onSignal = (signal: NodeJS.Signals) => {
        signals += 1;
        if (signals > 1) {
          logger.warn({ signal }, 'second signal: exiting without finishing the work in flight');
          process.exit(130);
        }
        const graceMs = options.stopGraceMs ?? 0;
        logger.info({ signal, graceMs }, graceMs > 0 ? `stopping: the work in flight has ${graceMs} ms to finish, then what finished is committed and the group left` : 'stopping: giving up the work in flight, committing what finished, leaving the group');
        void worker.stop({ graceMs });
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        await worker.done;
      } catch (error) {
        logger.error({ err: error }, 'orderly run: stopped by a fatal error');
        process.exitCode = 1;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        await metrics?.close();
      }
    });
}

async function startWorker(module: string, options: RunOptions, logger: Logger, program: Command, observer: EngineObserver | undefined): Promise<RunningTopology> {
  const topology = await loadTopology(module);
  return runTopology({
    topology,
    ...(observer ? { observer } : {}),
    bootstrap: options.bootstrap,
    group: options.group,
    stateDir: options.stateDir,
    logger,
    ...(options.commitEveryMs ? { commit: { everyMs: options.commitEveryMs } } : {}),
    ...(options.maxBuffered ? { maxBufferedPerPartition: options.maxBuffered } : {}),
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

/** Imports MODULE (a path, relative to the working directory) and returns its default export as a Topology. */
export async function loadTopology(module: string): Promise<Topology> {
  const url = pathToFileURL(resolve(module)).href;
  let exported: unknown;
  try {
    exported = ((await import(url)) as { default?: unknown }).default;
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_UNKNOWN_FILE_EXTENSION') {
      const hint = /\.[mc]?ts$/.test(module)
        ? `compile it to .js (npm run build), or run the CLI under tsx (npx tsx src/cli/main.ts run ${module} ...)`
        : 'give a JavaScript module (.js or .mjs) whose default export is a Topology';
      throw new Error(`orderly run: cannot import '${module}': ${hint}`, { cause: error });
    }
    throw error;
  }
  const topology = typeof exported === 'function' ? await (exported as () => unknown)() : exported;
  if (!isTopology(topology)) {
    throw new Error(`orderly run: '${module}' must export a Topology by default (export default stream(...)...build()), or a function that returns one`);
  }
  return topology;
}

function isTopology(value: unknown): value is Topology {
  const candidate = value as Partial<Topology> | undefined;
  return typeof candidate === 'object' && candidate !== null && typeof candidate.source?.topic === 'string' && Array.isArray(candidate.processors);
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

function toInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new InvalidArgumentError(`expected a whole number of at least 1, got '${value}'`);
  return number;
}

function toMilliseconds(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) throw new InvalidArgumentError(`expected a whole number of milliseconds, 0 or more, got '${value}'`);
  return number;
}

function toPort(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0 || number > 65_535) throw new InvalidArgumentError(`expected a port from 0 to 65535, got '${value}'`);
  return number;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
