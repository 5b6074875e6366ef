import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Topology } from '../../dsl/topology.js';
import type { Engine } from '../../engine/engine.js';
import type { ParkedEvent } from '../../engine/parkedKeys.js';
import { AckedProducer } from '../log/ackedProducer.js';
import type { KafkaSettings } from '../kafkaConfig.js';
import { matchResolution, type ParkedKeyNow } from './resolutionMatch.js';
import {
  controlRecord,
  describeResolution,
  parseControlRecord,
  resolutionsTopic,
  type ResolutionOutcome,
  type ResolutionRequest,
  type ResolutionStatus,
} from './resolutionRecords.js';
import { ensureTopics } from '../topics.js';
import { TopicReader } from '../log/topicReader.js';

/** What the resolutions of a worker act on: its engine, and which partitions it runs now. */
export interface ResolutionsOptions {
  readonly settings: KafkaSettings;
  readonly topology: Topology;
  readonly engine: Pick<Engine, 'resolve' | 'parked' | 'parkedHead'>;
  /** Whether this worker runs the partition of the source topic now: assigned, its state restored, not being revoked. */
  readonly owns: (partition: number) => boolean;
  readonly logger: Logger;
  /** How often requests waiting for their partition are looked at again. @defaultValue 250 */
  readonly checkEveryMs?: number;
}

/** The worker's side of `orderly parked resolve|replay`; stop it before the engine. */
export interface Resolutions {
  stop(): Promise<void>;
}

/**
 * Creates the control topic `<group>-resolutions` when missing (one partition), then reads it
 * whole, with no consumer group, for as long as the worker runs. Each request that no worker has
 * answered yet waits until this worker runs its partition (so after the partition's state is
 * restored); then it is applied if the key is still parked at the event it names (see
 * {@link matchResolution}) and answered on the same topic: applied, refused or stale.
 */
export async function startResolutions(options: ResolutionsOptions): Promise<Resolutions> {
  const { settings, logger } = options;
  const topic = resolutionsTopic(settings.group);
  await ensureTopics(settings, logger, { source: options.topology.source.topic, outputs: [topic], partitions: 1 });
  const producer = await AckedProducer.connect(
    { ...settings, clientId: `${settings.clientId ?? 'orderly'}-resolutions` },
    logger.child({ client: 'resolutions-producer' }),
    (error) => logger.error({ err: error }, 'resolutions producer failed'),
  );
  let reader: TopicReader;
  try {
    // One partition, just created maybe: assigned by number, so a topic not yet in the metadata is waited for, not missed.
    reader = await TopicReader.open({ settings, topic, role: 'resolutions', partitions: [0] });
  } catch (error) {
    // A connected producer would keep the process alive after the worker gave up.
    await producer.close();
    throw error;
  }
  const worker = new ResolutionWorker(options, producer, reader);
  return worker.start();
}

class ResolutionWorker {
  /** Requests with no outcome yet, in the topic's order. */
  private readonly pending = new Map<string, ResolutionRequest>();
  private readonly answered = new Set<string>();
  private stopped = false;
  private loop: Promise<void> | undefined;
  private readonly name = `${process.pid}`;

  constructor(
    private readonly options: ResolutionsOptions,
    private readonly producer: AckedProducer,
    private readonly reader: TopicReader,
  ) {}

  start(): Resolutions {
    this.loop = this.run();
    return { stop: () => this.stop() };
  }

  private async run(): Promise<void> {
    const { logger } = this.options;
    const everyMs = this.options.checkEveryMs ?? 250;
    while (!this.stopped) {
      try {
        const records = await this.reader.poll(0);
        for (const record of records) this.read(record.offset, record.value);
        await this.applyPending();
        if (records.length === 0) await sleep(everyMs);
      } catch (error) {
        logger.error({ err: error }, 'resolutions: reading or applying failed; trying again');
        await sleep(1_000);
      }
    }
  }

  private read(offset: number, value: Uint8Array | null): void {
    let record;
    try {
      record = parseControlRecord(value);
    } catch (error) {
      this.options.logger.warn({ offset, error: (error as Error).message }, 'resolutions: skipping an unreadable control record');
      return;
    }
    if (record.type === 'outcome') {
      this.answered.add(record.id);
      this.pending.delete(record.id);
    } else if (!this.answered.has(record.id)) {
      this.pending.set(record.id, record);
    }
  }

  private async applyPending(): Promise<void> {
    for (const request of [...this.pending.values()]) {
      if (this.stopped) return;
      const { target } = request;
      if (target.topic !== this.options.topology.source.topic || !this.options.owns(target.partition)) continue;
      const outcome = await this.apply(request);
      if (outcome === undefined) continue;
      await this.producer.produce([controlRecord(this.options.settings.group, outcome)]);
      this.pending.delete(request.id);
      this.answered.add(request.id);
    }
  }

  /** Applies one request whose partition this worker runs; undefined when it must wait (the partition is moving). */
  private async apply(request: ResolutionRequest): Promise<ResolutionOutcome | undefined> {
    const { engine, logger } = this.options;
    const { target } = request;
    const now = this.parkedNow(target.partition, target.lane);
    if (now === undefined) return undefined;
    const match = matchResolution(target, now);
    const fields = {
      resolution: request.id,
      partition: target.partition,
      key: target.lane,
      effectId: target.effectId,
      by: request.by,
      as: describeResolution(request.resolution),
    };
    if (match.kind === 'stale') {
      logger.warn({ ...fields, reason: match.reason }, 'resolution ignored: stale');
      return this.outcome(request, 'stale', match.reason);
    }
    try {
      await engine.resolve(target.partition, target.lane, request.resolution);
    } catch (error) {
      const message = (error as Error).message;
      logger.warn({ ...fields, error: message }, 'resolution refused');
      return this.outcome(request, 'refused', message);
    }
    logger.info(fields, 'resolution applied: the key replays');
    return this.outcome(
      request,
      'applied',
      `key '${target.lane}' of ${target.topic}/${target.partition} resolved by ${describeResolution(request.resolution)}; its events replay in order`,
    );
  }

  private parkedNow(partition: number, lane: string): ParkedKeyNow | undefined {
    const { engine } = this.options;
    try {
      const state = engine.parked().find((p) => p.partition === partition && p.lane === lane);
      const head: ParkedEvent | undefined = state && engine.parkedHead(partition, lane);
      return { state, head };
    } catch {
      // The partition went away between the check and the read: try again once it is back.
      return undefined;
    }
  }

  private outcome(request: ResolutionRequest, status: ResolutionStatus, message: string): ResolutionOutcome {
    return { type: 'outcome', id: request.id, status, message, worker: this.name, atMs: Date.now() };
  }

  private async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.loop;
    await this.reader.close();
    await this.producer.close();
  }
}
