import { InvalidArgumentError } from 'commander';
import type { Resolution } from '../engine/parkedKeys.js';
import { describeResolution } from '../kafka/parked/resolutionRecords.js';
import { listParked, ParkedKeyError, resolveParked, showParked, type ParkedSource, type ResolveResult } from '../kafka/parked/resolutionClient.js';
import { loadTopology } from './loadTopology.js';
import { formatList, formatShow, summaryOf } from './parkedFormat.js';

// What `orderly parked list|show|resolve|replay` do once their options are parsed; each returns what it prints.

/** Options every `orderly parked` command takes. */
export interface CommonOptions {
  bootstrap: string;
  group: string;
  topology?: string;
  topic?: string;
  park?: string;
  kafkaConfig: Record<string, string>;
  timeoutMs: number;
  json?: boolean;
}

export interface ResolveOptions extends CommonOptions {
  decision?: string;
  discard?: boolean;
  wait: boolean;
  by: string;
}

/** Options of `orderly parked list`. */
export interface ListOptions extends CommonOptions {
  partition?: number;
}

/** Exit codes of `parked resolve|replay`, documented in docs/parked.md. */
export const ResolveExit = { released: 0, sent: 0, 'parked-again': 3, refused: 2, stale: 2, timeout: 4 } as const;

/** `parked list`: the parked keys, as a table or a JSON array. */
export async function list(options: ListOptions): Promise<string> {
  const scope = await scopeOf(options);
  const views = await listParked(sourceOf(scope, options), options.timeoutMs, options.partition);
  return options.json ? `${JSON.stringify(views.map(summaryOf), null, 2)}\n` : formatList(views, scope.scope.topic);
}

/** `parked show`: one parked key, its head event and the events held behind it. */
export async function show(partition: number, key: string, options: CommonOptions): Promise<string> {
  const source = sourceOf(await scopeOf(options), options);
  const view = await showParked(source, options.timeoutMs, partition, key);
  if (!view) throw new ParkedKeyError(`key '${key}' of ${source.scope.topic}/${partition} is not parked; 'orderly parked list' shows the parked keys`);
  return options.json ? `${JSON.stringify(view, null, 2)}\n` : formatShow(view);
}

/** `parked resolve`: a person's decision for the head event, or its discard. */
export async function resolve(partition: number, key: string, options: ResolveOptions): Promise<string> {
  if ((options.decision === undefined) === !options.discard) throw new InvalidArgumentError('give exactly one of --decision JSON and --discard');
  const resolution: Resolution = options.discard ? { discard: true } : { decision: parseDecision(options.decision!) };
  return sendResolution(options, partition, key, resolution);
}

/** `parked replay`: retry the step for the head event. */
export async function replay(partition: number, key: string, options: ResolveOptions): Promise<string> {
  return sendResolution(options, partition, key, { retry: true });
}

async function sendResolution(options: ResolveOptions, partition: number, lane: string, resolution: Resolution): Promise<string> {
  const source = sourceOf(await scopeOf(options), options);
  const result = await resolveParked(source, { partition, lane, resolution, by: options.by, waitMs: options.wait ? options.timeoutMs : 0 });
  process.exitCode = ResolveExit[result.kind];
  return options.json ? `${JSON.stringify(jsonOf(result), null, 2)}\n` : `${describeResult(result)}\n`;
}

function describeResult(result: ResolveResult): string {
  const t = result.request.target;
  const what = `key '${t.lane}' of ${t.topic}/${t.partition} (${describeResolution(result.request.resolution)} for ${t.effectId})`;
  switch (result.kind) {
    case 'released': {
      // `replayed` counts the parked event too, whatever its resolution did with it.
      const resolution = result.request.resolution;
      const head =
        'discard' in resolution
          ? 'the parked event discarded'
          : 'decision' in resolution
            ? "the parked event given the person's decision"
            : 'the parked event retried';
      const held = result.replayed - 1;
      return `released: ${what}; ${head}, then ${held} held event${held === 1 ? '' : 's'} replayed in order`;
    }
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
      throw new ParkedKeyError(
        `--topic '${options.topic}' is not the source topic of '${options.topology}' ('${topology.source.topic}'); give one or the other`,
      );
    }
    return { scope: { topic: topology.source.topic, park: options.park ?? topology.park.name } };
  }
  if (!options.topic || !options.park) {
    throw new ParkedKeyError(
      'say which parked keys: --topology MODULE (the module `orderly run` runs), or --topic SOURCE_TOPIC with --park NAME (e.g. decide-park)',
    );
  }
  return { scope: { topic: options.topic, park: options.park } };
}

function sourceOf({ scope }: { scope: { topic: string; park: string } }, options: CommonOptions): ParkedSource {
  return { settings: { bootstrap: options.bootstrap, group: options.group, clientId: 'orderly-cli', librdkafka: options.kafkaConfig }, scope };
}

function parseDecision(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(
      `--decision must be JSON: the decision the parked step returns, which its schema checks (\`orderly parked show\` names the step): ${(error as Error).message}`,
    );
  }
}
