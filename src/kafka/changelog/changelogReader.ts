import rdkafka, { type LibrdKafkaError, type Message, type MessageHeader } from '@confluentinc/kafka-javascript';
import type { Logger } from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import { partitionId, type TopicPartition } from '../../ports/log.js';
import type { KafkaSettings } from '../kafkaConfig.js';
import { logClientTo } from '../log/kafkaLogger.js';
import { fromKafkaHeaders } from '../log/records.js';
import { BASE_FORMAT_VERSION, FORMAT_HEADER } from '../../state/storedFormat.js';

/**
 * librdkafka's answers that pass: a topic just created and not yet in the client's metadata, a
 * broker down or a partition leader moving (another replica takes over within seconds).
 */
const TRANSIENT: ReadonlySet<number> = new Set([
  -190, // _UNKNOWN_PARTITION
  -188, // _UNKNOWN_TOPIC
  -195, // _TRANSPORT
  -187, // _ALL_BROKERS_DOWN
  -185, // _TIMED_OUT
  -166, // _TIMED_OUT_QUEUE: the request waited in the client's queue past its timeout (a broker down)
  -137, // _DESTROY_BROKER: the connection to a broker that went away
  3, // UNKNOWN_TOPIC_OR_PART
  5, // LEADER_NOT_AVAILABLE
  6, // NOT_LEADER_FOR_PARTITION
  7, // REQUEST_TIMED_OUT
]);

function isTransient(error: unknown): boolean {
  const e = error as Partial<LibrdKafkaError>;
  return e.isRetriable === true || (typeof e.code === 'number' && TRANSIENT.has(e.code));
}

/** One changelog partition to read, from `from` up to (not including) `to`. */
export interface ChangelogRange extends TopicPartition {
  readonly from: number;
  readonly to: number;
}

/** The readable range of a changelog partition: `low` its first offset, `end` where a read of it ends. */
export interface ChangelogEnds {
  readonly low: number;
  readonly end: number;
}

/** A changelog record as a restore applies it. */
export interface ChangelogMessage {
  /** Where it was read (ChangelogReader sets both; a record that cannot be applied is named by them). */
  readonly partition?: number;
  readonly offset?: number;
  readonly key: string | null;
  readonly value: Uint8Array | null;
  /** Its headers; the format version's among them (none on records of formats 1 and 4). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/** One call of {@link ChangelogReader.read}: its partitions still being read, and whom to tell. */
interface ReadJob {
  /** Its partitions not read to their `to` yet, by partition id. */
  readonly pending: Map<string, ChangelogRange>;
  readonly apply: (messages: readonly ChangelogMessage[]) => Promise<void>;
  read: number;
  lastProgressMs: number;
  readonly resolve: (read: number) => void;
  readonly reject: (error: Error) => void;
}

/**
 * Reads changelog partitions to their end with a consumer of its own that joins no group: it is
 * assigned the partitions it reads and commits nothing. With `read_committed` (the default, as the
 * worker's consumer), a read ends at the last stable offset: never in an open transaction, never
 * an aborted record.
 *
 * Reads may run at the same time (a worker restores the partitions it is given concurrently): one
 * consumer serves them all, each read's partitions added to its assignment as the read starts and
 * taken out as each reaches its end, so a partition's read costs what it fetches, not a poll's
 * timeout, and a small partition is done while a large one is still being read.
 */
export class ChangelogReader {
  /** The reads under way, by the id of each partition they still read. */
  private readonly owners = new Map<string, ReadJob>();
  /** Partitions whose end was seen in an event (partition.eof), at that offset. */
  private readonly eofs = new Map<string, number>();
  private polling: Promise<void> | undefined;

  private constructor(
    private readonly consumer: ReaderConsumer,
    private readonly logger: Logger,
    private readonly timeoutMs: number,
  ) {
    // A transaction's commit marker takes the last offset(s) of a partition and is never
    // delivered: the partition's end event (or the consumer's position) says it was passed.
    this.consumer.on('partition.eof', (eof: { topic: string; partition: number; offset: number }) => {
      const id = partitionId(eof);
      if (this.owners.has(id)) this.eofs.set(id, eof.offset);
    });
  }

  static async connect(settings: KafkaSettings, logger: Logger, timeoutMs = 60_000): Promise<ChangelogReader> {
    const consumer = new rdkafka.KafkaConsumer(readerConfig(settings), { 'auto.offset.reset': 'earliest' }) as ReaderConsumer;
    logClientTo(consumer, logger, (error) => logger.error({ err: error }, 'changelog reader failed'));
    await new Promise<void>((resolve, reject) =>
      consumer.connect({ timeout: timeoutMs }, (error) =>
        error ? reject(new Error(`changelog reader could not connect to ${settings.bootstrap}: ${error.message}`)) : resolve(),
      ),
    );
    // A poll returns as soon as it has records (it waits only for the first): a restore is not
    // held by a poll's timeout once its records have come.
    consumer.setDefaultConsumeTimeout(POLL_TIMEOUT_MS);
    consumer.setDefaultIsTimeoutOnlyForFirstMessage(true);
    return new ChangelogReader(consumer, logger, timeoutMs);
  }

  /**
   * Where the partition begins and where a read of it ends now. A changelog created a moment ago
   * may not be in this client's metadata yet, and a broker may be down while its partitions move
   * to other replicas: those are waited out, within the reader's timeout.
   */
  async ends(tp: TopicPartition, signal?: AbortSignal): Promise<ChangelogEnds> {
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      // A broker that does not answer does not hold a stop for the whole timeout: checked before each try.
      if (signal?.aborted) throw new Error(`changelog ${partitionId(tp)}: reading its offsets abandoned`, { cause: signal.reason });
      try {
        return await this.watermarks(tp);
      } catch (error) {
        const code = (error as LibrdKafkaError).code;
        if (!isTransient(error) || Date.now() >= deadline) {
          throw new Error(`changelog ${partitionId(tp)}: could not read its offsets: ${(error as Error).message} (code ${code})`, { cause: error });
        }
        // The client keeps no fresh metadata of a topic it neither subscribes to nor is
        // assigned: ask for it, so that a partition's new leader is found.
        await this.refreshMetadata(tp.topic);
        await sleep(200);
      }
    }
  }

  private refreshMetadata(topic: string): Promise<void> {
    return new Promise((resolve) => this.consumer.getMetadata({ topic, timeout: 5_000 }, () => resolve()));
  }

  private watermarks(tp: TopicPartition): Promise<ChangelogEnds> {
    return new Promise((resolve, reject) =>
      // A short timeout per call: a call sent to a leader that just died waits all of it, and the
      // next call, with fresh metadata, finds the new leader.
      this.consumer.queryWatermarkOffsets(tp.topic, tp.partition, Math.min(5_000, this.timeoutMs), (error, offsets) =>
        error ? reject(error) : resolve({ low: offsets.lowOffset, end: offsets.highOffset }),
      ),
    );
  }

  /**
   * Reads every range to its `to` (taken once, before the read: what is written after it is not
   * waited for) and hands each polled batch of them to `apply`, in offset order per partition.
   * Returns the number of records read. Several reads may run at once, of different partitions.
   * When `signal` aborts, the read ends at once (its partitions leave the assignment, a poll under
   * way is not waited for) and rejects with an error whose `cause` is the signal's reason.
   */
  read(ranges: readonly ChangelogRange[], apply: (messages: readonly ChangelogMessage[]) => Promise<void>, signal?: AbortSignal): Promise<number> {
    const wanted = ranges.filter((r) => r.from < r.to);
    const abandoned = (): Error => new Error(`changelog read of ${wanted.map(partitionId).join(', ')} abandoned`, { cause: signal?.reason });
    if (signal?.aborted) return Promise.reject(abandoned());
    if (wanted.length === 0) return Promise.resolve(0);
    const busy = wanted.find((r) => this.owners.has(partitionId(r)));
    if (busy) return Promise.reject(new Error(`changelog ${partitionId(busy)} is being read already: a partition is restored by one read at a time`));
    return new Promise<number>((resolve, reject) => {
      const onAbort = (): void => {
        if (job.pending.size > 0) this.finish(job, abandoned());
      };
      const job: ReadJob = {
        pending: new Map(wanted.map((r) => [partitionId(r), r])),
        apply,
        read: 0,
        lastProgressMs: Date.now(),
        resolve: (read) => {
          signal?.removeEventListener('abort', onAbort);
          this.logger.debug({ ranges: wanted.map((r) => `${partitionId(r)}@${r.from}..${r.to}`), read }, 'read changelog');
          resolve(read);
        },
        reject: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      try {
        this.consumer.incrementalAssign(wanted.map(({ topic, partition, from }) => ({ topic, partition, offset: from })));
      } catch (error) {
        job.pending.clear();
        job.reject(new Error(`changelog read of ${wanted.map(partitionId).join(', ')} could not start: ${(error as Error).message}`, { cause: error }));
        return;
      }
      for (const id of job.pending.keys()) this.owners.set(id, job);
      this.polling ??= this.pollWhileReading().finally(() => (this.polling = undefined));
    });
  }

  async close(): Promise<void> {
    await this.polling;
    await new Promise<void>((resolve) => this.consumer.disconnect(() => resolve()));
  }

  /** Polls while any read is under way, handing each read its records and ending each partition at its `to`. */
  private async pollWhileReading(): Promise<void> {
    while (this.owners.size > 0) {
      let batch: Message[];
      try {
        batch = await this.poll();
      } catch (error) {
        for (const job of new Set(this.owners.values())) this.finish(job, error as Error);
        return;
      }
      const byJob = new Map<ReadJob, ChangelogMessage[]>();
      /** The read each partition's records were polled for: an abandoned read's partition may be read anew before its batch is applied. */
      const polledFor = new Map<string, ReadJob | undefined>();
      // A poll's records come in runs of one partition: looked up once per run.
      let runOf: Message | undefined;
      let job: ReadJob | undefined;
      let range: ChangelogRange | undefined;
      let messages: ChangelogMessage[] | undefined;
      for (const message of batch) {
        if (runOf === undefined || message.partition !== runOf.partition || message.topic !== runOf.topic) {
          runOf = message;
          const id = partitionId(message);
          job = this.owners.get(id);
          polledFor.set(id, job);
          range = job?.pending.get(id);
          messages = job && byJob.get(job);
          if (job && !messages) byJob.set(job, (messages = []));
        }
        if (!job || !range || !messages || message.offset < range.from || message.offset >= range.to) continue;
        messages.push({
          partition: message.partition,
          offset: message.offset,
          key: message.key === null || message.key === undefined ? null : message.key.toString(),
          value: message.value ?? null,
          headers: changelogHeaders(message.headers),
        });
      }
      // Each read applies its records in order; different reads apply theirs side by side.
      await Promise.all(
        [...byJob].map(async ([job, messages]) => {
          try {
            await job.apply(messages);
            job.read += messages.length;
            job.lastProgressMs = Date.now();
          } catch (error) {
            this.finish(job, error as Error);
          }
        }),
      );
      this.endReachedPartitions(batch, polledFor);
    }
  }

  /**
   * Takes out of the assignment each partition read to its `to`: its last record came, or its
   * position (past any commit marker) or an end event reached `to`. Settles the reads that are done,
   * and fails those that made no progress for the reader's timeout.
   */
  private endReachedPartitions(batch: readonly Message[], polledFor: ReadonlyMap<string, ReadJob | undefined>): void {
    const last = new Map<string, number>();
    for (let i = 0; i < batch.length; i++) {
      const message = batch[i]!;
      const next = batch[i + 1];
      // The last record of each run of one partition, if polled for the read that reads it now.
      if (next !== undefined && next.partition === message.partition && next.topic === message.topic) continue;
      const id = partitionId(message);
      if (polledFor.get(id) === this.owners.get(id)) last.set(id, message.offset);
    }
    const tps = [...new Set(this.owners.values())].flatMap((job) => [...job.pending.values()]);
    const positions = new Map<string, number>();
    try {
      for (const p of this.consumer.position(tps.map(({ topic, partition }) => ({ topic, partition }))))
        if (p.offset !== undefined && p.offset >= 0) positions.set(partitionId(p), p.offset);
    } catch {
      // No position yet: the records and the end events still tell.
    }
    const done: ChangelogRange[] = [];
    for (const range of tps) {
      const id = partitionId(range);
      const reached = Math.max((last.get(id) ?? -1) + 1, positions.get(id) ?? -1, this.eofs.get(id) ?? -1);
      if (reached >= range.to) done.push(range);
    }
    if (done.length > 0) this.release(done);
    for (const range of done) {
      const job = this.owners.get(partitionId(range));
      this.owners.delete(partitionId(range));
      if (!job) continue;
      job.pending.delete(partitionId(range));
      if (job.pending.size === 0) job.resolve(job.read);
    }
    const now = Date.now();
    for (const job of new Set(this.owners.values())) {
      if (now - job.lastProgressMs <= this.timeoutMs) continue;
      const where = [...job.pending.values()].map((r) => `${partitionId(r)} (to offset ${r.to})`).join(', ');
      this.finish(job, new Error(`changelog restore made no progress for ${this.timeoutMs} ms on ${where}: check that the brokers of these partitions are up`));
    }
  }

  /** Ends a read that failed: its partitions leave the assignment, and it rejects. */
  private finish(job: ReadJob, error: Error): void {
    const ranges = [...job.pending.values()];
    for (const range of ranges) this.owners.delete(partitionId(range));
    job.pending.clear();
    this.release(ranges);
    job.reject(error);
  }

  private release(ranges: readonly ChangelogRange[]): void {
    for (const range of ranges) this.eofs.delete(partitionId(range));
    try {
      this.consumer.incrementalUnassign(ranges.map(({ topic, partition }) => ({ topic, partition })));
    } catch (error) {
      this.logger.debug({ err: error }, 'changelog read: unassigning read partitions failed');
    }
  }

  /** One poll; a transient error (a broker down) is a poll that found nothing, and counts against the no-progress timeout. */
  private poll(): Promise<Message[]> {
    return new Promise((resolve, reject) =>
      this.consumer.consume(POLL_MAX_RECORDS, (error: LibrdKafkaError, messages: Message[]) => {
        if (!error) resolve(messages);
        else if (isTransient(error)) {
          this.logger.debug({ code: error.code }, `changelog read: ${error.message}; retrying`);
          setTimeout(() => resolve([]), 200);
        } else reject(new Error(`changelog read: ${error.message} (code ${error.code})`));
      }),
    );
  }
}

/** The headers of a record that carries nothing (format 2), one frozen object shared by all. */
const CURRENT_FORMAT_HEADERS: Readonly<Record<string, string>> = Object.freeze({ [FORMAT_HEADER]: String(BASE_FORMAT_VERSION) });
const CURRENT_FORMAT_BYTES = Buffer.from(String(BASE_FORMAT_VERSION));

/**
 * A record's headers as one object; undefined when it has none (formats 1 and 4). A record of
 * format 2 carries one header: that case is recognised without building an object per record.
 */
function changelogHeaders(headers: readonly MessageHeader[] | undefined): Readonly<Record<string, string>> | undefined {
  if (headers === undefined || headers.length === 0) return undefined;
  if (headers.length === 1) {
    // librdkafka's list holds one object per header, each with its one name.
    const value = headers[0]![FORMAT_HEADER];
    if (value !== undefined && typeof value !== 'string' && CURRENT_FORMAT_BYTES.equals(value)) return CURRENT_FORMAT_HEADERS;
  }
  return fromKafkaHeaders(headers);
}

/** Most records one poll of the reader returns. */
const POLL_MAX_RECORDS = 5_000;
/** How long a poll waits for its first record. */
const POLL_TIMEOUT_MS = 100;

/** The consumer methods the reader uses that the library's typings leave out. */
interface ReaderConsumer extends rdkafka.KafkaConsumer {
  incrementalAssign(assignments: rdkafka.Assignment[]): void;
  incrementalUnassign(assignments: rdkafka.Assignment[]): void;
  setDefaultIsTimeoutOnlyForFirstMessage(value: boolean): void;
}

/** A consumer that is assigned its partitions and never commits: no group is joined. */
function readerConfig(settings: KafkaSettings): rdkafka.ConsumerGlobalConfig {
  return {
    'bootstrap.servers': settings.bootstrap,
    'client.id': `${settings.clientId ?? 'orderly'}-changelog-reader`,
    'log.connection.close': false,
    // librdkafka wants a group id; assign() never joins it and nothing is committed to it.
    'group.id': `${settings.group}-changelog-reader`,
    'enable.auto.commit': false,
    'enable.auto.offset.store': false,
    'isolation.level': settings.isolationLevel ?? 'read_committed',
    'enable.partition.eof': true,
    // The end of a partition whose last offset is a commit marker is heard from an empty fetch:
    // the broker answers it after this wait, not the default 500 ms (only while restoring).
    'fetch.wait.max.ms': 10,
    'allow.auto.create.topics': false,
    ...settings.librdkafka,
  } as rdkafka.ConsumerGlobalConfig;
}
