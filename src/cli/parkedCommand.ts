import { InvalidArgumentError, type Command } from 'commander';
import { hostname, userInfo } from 'node:os';
import type { Resolution } from '../engine/parkedKeys.js';
import { describeResolution } from '../kafka/resolutionRecords.js';
import { listParked, ParkedKeyError, resolveParked, showParked, type ParkedSource, type ResolveResult } from '../kafka/resolutionClient.js';
import { formatList, formatShow, summaryOf } from './parkedFormat.js';
import { loadTopology } from './runCommand.js';

/** Options every `orderly parked` command takes. */
interface CommonOptions {
  bootstrap: string;
  group: string;
  topology?: string;
  topic?: string;
  park?: string;
  kafkaConfig: Record<string, string>;
  timeoutMs: number;
  json?: boolean;
}

interface ResolveOptions extends CommonOptions {
  decision?: string;
  discard?: boolean;
  wait: boolean;
  by: string;
}

/** Exit codes of `parked resolve|replay`, documented in docs/parked.md. */
export const ResolveExit = { released: 0, sent: 0, 'parked-again': 3, refused: 2, stale: 2, timeout: 4 } as const;

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
    .action((options: CommonOptions & { partition?: number }) =>
      run(async () => {
        const views = await listParked(sourceOf(await scopeOf(options), options), options.timeoutMs, options.partition);
        return options.json ? `${JSON.stringify(views.map(summaryOf), null, 2)}\n` : formatList(views, (await scopeOf(options)).scope.topic);
      }),
    );

  withCommon(parked.command('show').description('show a parked key: its head event with attempts and errors, and the events held behind it, in order'))
    .argument('<partition>', 'the partition of the source topic', toPartition)
    .argument('<key>', 'the key (as `parked list` shows it)')
    .option('--json', 'print the key as JSON')
    .action((partition: number, key: string, options: CommonOptions) =>
      run(async () => {
        const source = sourceOf(await scopeOf(options), options);
        const view = await showParked(source, options.timeoutMs, partition, key);
        if (!view) throw new ParkedKeyError(`key '${key}' of ${source.scope.topic}/${partition} is not parked; 'orderly parked list' shows the parked keys`);
        return options.json ? `${JSON.stringify(view, null, 2)}\n` : formatShow(view);
      }),
    );

  withResolve(
    withCommon(
      parked
        .command('resolve')
        .description("resolve a parked key with a person's decision for its head event (--decision) or by discarding that event (--discard); then its events replay in order"),
    ),
  )
    .argument('<partition>', 'the partition of the source topic', toPartition)
    .argument('<key>', 'the key (as `parked list` shows it)')
    .option('--decision <json>', "the decision for the head event, as JSON; the engine validates it against the step's schema")
    .option('--discard', 'discard the head event (no effect); the held events replay')
    .action((partition: number, key: string, options: ResolveOptions) =>
      run(async () => {
        if ((options.decision === undefined) === !options.discard) throw new InvalidArgumentError('give exactly one of --decision JSON and --discard');
        const resolution: Resolution = options.discard ? { discard: true } : { decision: parseDecision(options.decision!) };
        return resolve(options, partition, key, resolution);
      }),
    );

  withResolve(withCommon(parked.command('replay').description("resolve a parked key by retrying its step for the head event, then replay the key's events in order")))
    .argument('<partition>', 'the partition of the source topic', toPartition)
    .argument('<key>', 'the key (as `parked list` shows it)')
    .action((partition: number, key: string, options: ResolveOptions) => run(() => resolve(options, partition, key, { retry: true })));
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
    .option('--by <who>', 'who resolves, for the workers\' logs', defaultBy())
    .option('--json', 'print the outcome as JSON');
}

async function resolve(options: ResolveOptions, partition: number, lane: string, resolution: Resolution): Promise<string> {
  const source = sourceOf(await scopeOf(options), options);
  const result = await resolveParked(source, { partition, lane, resolution, by: options.by, waitMs: options.wait ? options.timeoutMs : 0 });
  process.exitCode = ResolveExit[result.kind];
  return options.json ? `${JSON.stringify(jsonOf(result), null, 2)}\n` : `${describeResult(result)}\n`;
}

function describeResult(result: ResolveResult): string {
  const t = result.request.target;
  const what = `key '${t.lane}' of ${t.topic}/${t.partition} (${describeResolution(result.request.resolution)} for ${t.effectId})`;
  switch (result.kind) {
    case 'released':
      return `released: ${what}; ${result.replayed} event${result.replayed === 1 ? '' : 's'} replayed in order`;
    case 'parked-again': {
      const head = result.view.head;
      const error = head?.errors.at(-1)?.error;
      return `parked again: ${what} was applied, and the key is parked again at ${head?.event.effectId ?? '?'}${error ? `: ${error}` : ''}`;
    }
    case 'refused':
      return `refused: ${what}: ${result.message}`;
    case 'stale':
      return `stale, not applied: ${what}: ${result.message}`;
    case 'sent':
      return `sent: ${what} as resolution ${result.request.id}; not waiting (orderly parked list shows when it is released)`;
    case 'timeout':
      return `no outcome yet: ${what}: ${result.message}`;
  }
}

function jsonOf(result: ResolveResult): Record<string, unknown> {
  const { kind, request, ...rest } = result;
  const extra = 'view' in rest ? { view: summaryOf(rest.view) } : rest;
  return { outcome: kind, id: request.id, target: request.target, resolution: request.resolution, ...extra };
}

/** Where the parked keys are: from --topology, or from --topic and --park. */
async function scopeOf(options: CommonOptions): Promise<{ scope: { topic: string; park: string } }> {
  if (options.topology) {
    const topology = await loadTopology(options.topology);
    if (!topology.park) throw new ParkedKeyError(`'${options.topology}' has no park(): its keys are never parked`);
    if (options.topic && options.topic !== topology.source.topic) {
      throw new ParkedKeyError(`--topic '${options.topic}' is not the source topic of '${options.topology}' ('${topology.source.topic}'); give one or the other`);
    }
    return { scope: { topic: topology.source.topic, park: options.park ?? topology.park.name } };
  }
  if (!options.topic || !options.park) {
    throw new ParkedKeyError('say which parked keys: --topology MODULE (the module `orderly run` runs), or --topic SOURCE_TOPIC with --park NAME (e.g. decide-park)');
  }
  return { scope: { topic: options.topic, park: options.park } };
}

function sourceOf({ scope }: { scope: { topic: string; park: string } }, options: CommonOptions): ParkedSource {
  return { settings: { bootstrap: options.bootstrap, group: options.group, clientId: 'orderly-cli', librdkafka: options.kafkaConfig }, scope };
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

function parseDecision(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(`--decision must be JSON, e.g. '{"action":"refund","rationale":"..."}': ${(error as Error).message}`);
  }
}

function defaultBy(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return `unknown@${hostname()}`;
  }
}

function toPartition(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`a partition is a whole number of at least 0, got '${value}'`);
  return n;
}

function toPositive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a whole number of at least 1, got '${value}'`);
  return n;
}

function collectProperty(pair: string, previous: Record<string, string>): Record<string, string> {
  const at = pair.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError(`a librdkafka property needs key=value, got '${pair}'`);
  return { ...previous, [pair.slice(0, at)]: pair.slice(at + 1) };
}
