import type { Command } from 'commander';
import { hostname, userInfo } from 'node:os';
import type { ListOptions, CommonOptions, ResolveOptions } from './parkedActions.js';
import { collectProperty, toPartition, toPositive } from './optionValues.js';

/** What the commands do, loaded only when one runs (it loads the native Kafka client). */
const actions = () => import('./parkedActions.js');

/**
 * `orderly parked list|show|resolve|replay`: the parked keys of a topology running on a Kafka
 * cluster, read from the park's changelog, and their resolutions, sent to the worker that owns
 * the key's partition through the `<group>-resolutions` topic.
 */
export function registerParkedCommand(program: Command): void {
  const parked = program
    .command('parked')
    .description("list, show and resolve the parked keys of a topology running on Kafka (read from the park's changelog)");

  withCommon(parked.command('list').description('list the parked keys: partition, key, status, head event, held count, parked time'))
    .option('--partition <n>', 'only this partition', toPartition)
    .option('--json', 'print a JSON array')
    .action((options: ListOptions) => run(async () => (await actions()).list(options)));

  withCommon(parked.command('show').description('show a parked key: its head event with attempts and errors, and the events held behind it, in order'))
    .argument('<partition>', 'the partition of the source topic', toPartition)
    .argument('<key>', 'the key (as `parked list` shows it)')
    .option('--json', 'print the key as JSON')
    .action((partition: number, key: string, options: CommonOptions) => run(async () => (await actions()).show(partition, key, options)));

  withResolve(
    withCommon(
      parked
        .command('resolve')
        .description(
          "resolve a parked key with a person's decision for its head event (--decision) or by discarding that event (--discard); then its events replay in order",
        ),
    ),
  )
    .argument('<partition>', 'the partition of the source topic', toPartition)
    .argument('<key>', 'the key (as `parked list` shows it)')
    .option('--decision <json>', "the decision for the head event, as JSON; the engine validates it against the step's schema")
    .option('--discard', 'discard the head event (no effect); the held events replay')
    .action((partition: number, key: string, options: ResolveOptions) => run(async () => (await actions()).resolve(partition, key, options)));

  withResolve(
    withCommon(parked.command('replay').description("resolve a parked key by retrying its step for the head event, then replay the key's events in order")),
  )
    .argument('<partition>', 'the partition of the source topic', toPartition)
    .argument('<key>', 'the key (as `parked list` shows it)')
    .action((partition: number, key: string, options: ResolveOptions) => run(async () => (await actions()).replay(partition, key, options)));
}

function withCommon(command: Command): Command {
  return command
    .requiredOption('--bootstrap <servers>', 'Kafka bootstrap servers, host:port[,host:port...]')
    .requiredOption('--group <id>', "the workers' consumer group id (as given to `orderly run`)")
    .option('--topology <module>', 'the module `orderly run` runs: gives the source topic and the park (its store name)')
    .option('--topic <topic>', 'the source topic, when no --topology is given (with --park)')
    .option('--park <name>', "the park's name (its store), when no --topology is given: `<step>-park` unless named, e.g. decide-park")
    .option('-X, --kafka-config <key=value>', 'a librdkafka property, e.g. security.protocol=SSL (repeatable)', collectProperty, {})
    .option('--timeout-ms <ms>', 'how long to read the changelog, and to wait for a resolution to take effect', toPositive, 60_000);
}

function withResolve(command: Command): Command {
  return command
    .option('--no-wait', 'send the resolution and return, without waiting for the replay')
    .option('--by <who>', "who resolves, for the workers' logs", defaultBy())
    .option('--json', 'print the outcome as JSON');
}

/** Runs one command: prints what it returns; prints an error naming the fix and exits 1. */
async function run(action: () => Promise<string>): Promise<void> {
  try {
    process.stdout.write(await action());
  } catch (error) {
    // A bad argument, a key that is not parked, a missing changelog, an unreachable cluster.
    process.stderr.write(`orderly parked: ${(error as Error).message}\n`);
    process.exitCode = 1;
  }
}

function defaultBy(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return `unknown@${hostname()}`;
  }
}
