import type { Command } from 'commander';
import type { InvalidArgumentError } from 'commander';
import { collect, toLogLevel, toMilliseconds, toPort, toPositive, toStoredFormat, toWholeNumber } from './optionValues.js';
import type { RunOptions } from './runWorker.js';

/**
 * `orderly run MODULE --bootstrap HOST:PORT --group ID --state-dir DIR`: runs the topology that
 * MODULE exports by default on a Kafka cluster until SIGINT or SIGTERM.
 */
export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description('run the topology that MODULE exports by default on a Kafka cluster, until SIGINT or SIGTERM')
    .argument('<module>', 'a module (.js, .mjs or .ts) whose default export is a Topology (or a function returning one)')
    .requiredOption('--bootstrap <servers>', 'Kafka bootstrap servers, host:port[,host:port...]')
    .requiredOption('--group <id>', 'consumer group id, the same for every worker of this topology')
    .requiredOption('--state-dir <dir>', "this worker's LevelDB state directory (created when missing; one process at a time)")
    .option('--group-protocol <protocol>', 'classic (cooperative-sticky) or consumer (KIP-848)', 'classic')
    .option('--session-timeout-ms <ms>', 'classic protocol: how long a silent worker keeps its partitions', toPositive)
    .option('--instance-id <id>', 'static group membership: a restarted worker with the same id gets its partitions back without a rebalance')
    .option(
      '--commit-every-ms <ms>',
      "commit each partition's finished prefix this often, on whole multiples of it since the Unix epoch (default 5000)",
      toPositive,
    )
    .option(
      '--commit-metadata-max-bytes <n>',
      "longest commit metadata, which lists the finished offsets above each committed one so that a restart skips them; below the broker's offset.metadata.max.bytes, 0: none (default 4095)",
      toWholeNumber,
    )
    .option(
      '--no-effect-ring',
      'record effects under their effect ids only, as orderly before effect rings did: while workers of such an orderly share the group (the first step of a rolling upgrade, docs/state.md)',
    )
    .option(
      '--stored-format <version>',
      "the stored format of the changelogs written (default 4: no headers, a row's record carries its events' effect records); 2 while workers of an orderly before format 4 share the group (the first step of a rolling upgrade, docs/state.md)",
      toStoredFormat,
    )
    .option('--max-buffered <n>', 'unfinished events per partition before it is paused, resumed at half (default 1500)', toPositive)
    .option(
      '--stop-grace-ms <ms>',
      'on SIGINT or SIGTERM, how long the model calls in flight may finish before they are given up (default 0: at once; given-up events are redone by the next owner)',
      toMilliseconds,
    )
    .option(
      '--rate-limit-warn-ms <ms>',
      'warn when the agent step has been refused (429) this long with no answer, then at most this often (default 60000)',
      toPositive,
    )
    .option(
      '--exactly-once',
      'outputs, state changelogs and input offsets in one Kafka transaction per commit: a read_committed reader sees each output once (commits every 100 ms unless --commit-every-ms)',
    )
    .option(
      '--transactional-id <id>',
      "with --exactly-once: this worker's transactional id, stable across its restarts and unique in the group (default: derived from the group, the host and the state directory)",
    )
    .option('--transaction-timeout-ms <ms>', 'with --exactly-once: how long the broker keeps a transaction open before aborting it (default 10000)', toPositive)
    .option('-X, --kafka-config <key=value>', 'a librdkafka property for every client, e.g. security.protocol=SSL (repeatable)', collect, [])
    .option('--consumer-config <key=value>', 'a librdkafka property of the consumer only, e.g. max.poll.interval.ms=600000 (repeatable)', collect, [])
    .option('--producer-config <key=value>', 'a librdkafka property of the producer only, e.g. linger.ms=20 (repeatable)', collect, [])
    .option('--metrics-port <port>', 'serve Prometheus metrics at http://HOST:PORT/metrics (0: any free port, logged at start)', toPort)
    .option('--metrics-host <host>', 'the address the metrics are served on', '127.0.0.1')
    .option('--log-level <level>', 'pino level: fatal, error, warn, info, debug, trace or silent (default: ORDERLY_LOG_LEVEL, else info)', toLogLevel)
    .action(async (module: string, options: RunOptions) => {
      // The default is read here, not by commander, so that ORDERLY_LOG_LEVEL is checked as the flag is.
      if (options.logLevel === undefined) {
        try {
          options.logLevel = toLogLevel(process.env.ORDERLY_LOG_LEVEL ?? 'info');
        } catch (error) {
          program.error(`orderly run: ORDERLY_LOG_LEVEL: ${(error as InvalidArgumentError).message}`);
        }
      }
      if (!options.exactlyOnce && (options.transactionalId || options.transactionTimeoutMs)) {
        program.error('orderly run: --transactional-id and --transaction-timeout-ms need --exactly-once');
      }
      if (!['classic', 'consumer'].includes(options.groupProtocol)) {
        program.error(`orderly run: --group-protocol must be classic or consumer, got '${options.groupProtocol}'`);
      }
      const { runWorker } = await import('./runWorker.js');
      await runWorker(module, options, program);
    });
}
