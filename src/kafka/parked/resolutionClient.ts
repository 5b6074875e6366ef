import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { checkResolution } from '../../engine/checkResolution.js';
import { checkBootstrap } from '../bootstrapCheck.js';
import type { Resolution } from '../../engine/parkedKeys.js';
import { AckedProducer } from '../log/ackedProducer.js';
import { ChangelogTail } from '../changelog/changelogTail.js';
import type { KafkaSettings } from '../kafkaConfig.js';
import { changelogTopic } from '../changelog/changelogWrite.js';
import { parkedKeyOf, parkedKeysOf, type ParkedKeyView, type ParkedScope } from './parkedChangelog.js';
import {
  controlRecord,
  parseControlRecord,
  resolutionsTopic,
  type ResolutionOutcome,
  type ResolutionRequest,
  type ResolutionTarget,
} from './resolutionRecords.js';
import { ensureTopics } from '../topics.js';
import { allPartitions, MissingTopicError, partitionCount, TopicReader } from '../log/topicReader.js';

/** Where the parked keys of one topology live: its cluster, group, source topic and park. */
export interface ParkedSource {
  readonly settings: KafkaSettings;
  readonly scope: ParkedScope;
}

/** A request could not be made, or the parked state could not be read; the message says what to do. */
export class ParkedKeyError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ParkedKeyError';
  }
}

/**
 * Opens the park's changelog (or the partitions given) and reads it to its end. A malformed or
 * unreachable bootstrap is refused first, in seconds, naming the address and the cause.
 */
export async function readParkedChangelog(source: ParkedSource, timeoutMs: number, partitions?: readonly number[]): Promise<ChangelogTail> {
  await checkBootstrap(source.settings.bootstrap);
  const topic = changelogTopic(source.settings.group, source.scope.park);
  let reader: ChangelogTail;
  try {
    const count = await partitionCount(source.settings, topic);
    const wrong = partitions?.find((p) => p >= count);
    if (wrong !== undefined) throw new ParkedKeyError(`partition ${wrong} does not exist: ${source.scope.topic} has ${count} (0 to ${count - 1})`);
    reader = await ChangelogTail.open(source.settings, topic, partitions ?? allPartitions(count), pino({ level: 'silent' }), timeoutMs);
  } catch (error) {
    if (error instanceof MissingTopicError) {
      throw new ParkedKeyError(
        `the park's changelog '${topic}' does not exist on ${source.settings.bootstrap}: check --group and the park name ('${source.scope.park}'); ` +
          'a worker of this group creates it when it starts',
        { cause: error },
      );
    }
    throw error;
  }
  try {
    await reader.catchUp();
  } catch (error) {
    await reader.close();
    throw error;
  }
  return reader;
}

/** The parked keys now, from the changelog. */
export async function listParked(source: ParkedSource, timeoutMs: number, partition?: number): Promise<ParkedKeyView[]> {
  const reader = await readParkedChangelog(source, timeoutMs, partition === undefined ? undefined : [partition]);
  try {
    return parkedKeysOf(reader.fold, source.scope, partition);
  } finally {
    await reader.close();
  }
}

/** One parked key now, from the changelog; undefined when it is not parked. */
export async function showParked(source: ParkedSource, timeoutMs: number, partition: number, lane: string): Promise<ParkedKeyView | undefined> {
  const reader = await readParkedChangelog(source, timeoutMs, [partition]);
  try {
    return parkedKeyOf(reader.fold, source.scope, partition, lane);
  } finally {
    await reader.close();
  }
}

export interface ResolveOptions {
  readonly partition: number;
  readonly lane: string;
  readonly resolution: Resolution;
  /** Who asks, for the worker's log. */
  readonly by: string;
  /** Wait for the outcome (and the replay) at most this long; 0: send and return. */
  readonly waitMs: number;
}

/**
 * What came of a resolution. `released`: applied, the key's events replayed in order and the key
 * is no longer parked; `parked-again`: applied, and the key is parked again (the retried step
 * failed again, or a later event failed its attempts); `refused`: the engine refused it (a
 * decision that fails the step's schema), the key stays parked as it was; `stale`: the key was no
 * longer parked at that event; `sent`: not waited for; `timeout`: no answer in time.
 */
export type ResolveResult =
  /** `replayed`: the events the resolution went through, the parked one (applied or discarded) and those held behind it. */
  | { readonly kind: 'released'; readonly request: ResolutionRequest; readonly replayed: number }
  | { readonly kind: 'parked-again'; readonly request: ResolutionRequest; readonly view: ParkedKeyView }
  | { readonly kind: 'refused' | 'stale'; readonly request: ResolutionRequest; readonly message: string }
  | { readonly kind: 'sent'; readonly request: ResolutionRequest }
  | { readonly kind: 'timeout'; readonly request: ResolutionRequest; readonly message: string };

/**
 * Resolves a parked key on the cluster: reads its parked head from the changelog, writes a
 * resolution naming that head to `<group>-resolutions`, and (unless `waitMs` is 0) waits for the
 * owner's answer and for the changelog to show the key released or parked again.
 */
export async function resolveParked(source: ParkedSource, options: ResolveOptions): Promise<ResolveResult> {
  const { settings, scope } = source;
  // Refused before anything is read or sent: a worker would refuse it anyway, later.
  checkResolution(`resolve key '${options.lane}' of ${scope.topic}/${options.partition}`, options.resolution);
  const started = Date.now();
  const changelog = await readParkedChangelog(source, Math.max(options.waitMs, 30_000), [options.partition]);
  try {
    const view = parkedKeyOf(changelog.fold, scope, options.partition, options.lane);
    const request = requestFor(source, view, options);
    const control = resolutionsTopic(settings.group);
    await ensureTopics(settings, pino({ level: 'silent' }), { source: scope.topic, outputs: [control], partitions: 1 });
    const producer = await AckedProducer.connect({ ...settings, clientId: 'orderly-cli' }, pino({ level: 'silent' }), () => undefined);
    try {
      await producer.produce([controlRecord(settings.group, request)]);
    } finally {
      await producer.close();
    }
    if (options.waitMs <= 0) return { kind: 'sent', request };
    return await waitForResult(source, changelog, request, view!, started + options.waitMs);
  } finally {
    await changelog.close();
  }
}

function requestFor(source: ParkedSource, view: ParkedKeyView | undefined, options: ResolveOptions): ResolutionRequest {
  const where = `key '${options.lane}' of ${source.scope.topic}/${options.partition}`;
  if (!view) throw new ParkedKeyError(`${where} is not parked (per its changelog, read to the end); 'orderly parked list' shows the parked keys`);
  if (view.status === 'replaying') throw new ParkedKeyError(`${where} is already resolved and its events are being replayed; wait, then look again`);
  if (!view.head) throw new ParkedKeyError(`${where}: its head event is not in the changelog yet; look again in a moment`);
  return {
    type: 'resolve',
    id: randomUUID(),
    target: { topic: source.scope.topic, partition: options.partition, lane: options.lane, effectId: view.head.event.effectId, parkedAtMs: view.parkedAtMs },
    resolution: options.resolution,
    by: options.by,
    atMs: Date.now(),
  };
}

async function waitForResult(
  source: ParkedSource,
  changelog: ChangelogTail,
  request: ResolutionRequest,
  before: ParkedKeyView,
  deadline: number,
): Promise<ResolveResult> {
  const control = await TopicReader.open({
    settings: source.settings,
    topic: resolutionsTopic(source.settings.group),
    role: 'cli-resolutions',
    partitions: [0],
  });
  const { target } = request;
  let outcome: ResolutionOutcome | undefined;
  let lastNextSeq = before.nextSeq;
  try {
    for (;;) {
      for (const record of await control.poll(0)) {
        const parsed = safeParse(record.value);
        if (parsed?.type === 'outcome' && parsed.id === request.id) outcome = parsed;
      }
      if (outcome && outcome.status !== 'applied') return { kind: outcome.status, request, message: outcome.message };
      await changelog.poll(100);
      const now = parkedKeyOf(changelog.fold, source.scope, target.partition, target.lane);
      const progress = progressOf(target, now);
      if (progress === 'released' || !now) return { kind: 'released', request, replayed: lastNextSeq - before.headSeq };
      if (progress === 'parked-again') return { kind: 'parked-again', request, view: now };
      lastNextSeq = now.nextSeq;
      if (Date.now() > deadline) {
        const message = outcome
          ? `the owner applied the resolution, but the key was still ${now.status} when the wait ended; 'orderly parked show' tells how far its replay got`
          : `no worker answered: is a worker of group '${source.settings.group}' running and does one own partition ${target.partition}? ` +
            `The resolution stays on ${resolutionsTopic(source.settings.group)} and is applied when the owner reads it, if the key is still parked at ${target.effectId}`;
        return { kind: 'timeout', request, message };
      }
    }
  } finally {
    await control.close();
  }
}

/**
 * Where a key stands after a resolution was sent, from the changelog: `released` (no longer
 * parked), `parked-again` (parked, at another event or parked anew at the same one), or `waiting`
 * (still parked as it was: not applied yet; or being replayed).
 */
export function progressOf(target: ResolutionTarget, now: ParkedKeyView | undefined): 'released' | 'parked-again' | 'waiting' {
  if (!now) return 'released';
  const moved = now.head?.event.effectId !== target.effectId || now.parkedAtMs !== target.parkedAtMs;
  return now.status === 'parked' && moved ? 'parked-again' : 'waiting';
}

function safeParse(value: Uint8Array | null) {
  try {
    return parseControlRecord(value);
  } catch {
    return undefined;
  }
}
