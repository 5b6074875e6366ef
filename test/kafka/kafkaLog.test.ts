// The Log port's Kafka adapter in-process, on the real broker: delivery, commits, pause and
// resume, incremental rebalances whose callbacks are awaited.
import rdkafka from '@confluentinc/kafka-javascript';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { partitionId, type LogListener, type LogRecord, type TopicPartition } from '../../src/ports/log.js';
import { KafkaLog } from '../../src/kafka/log/kafkaLog.js';
import { ensureTopics, TopicError } from '../../src/kafka/topics.js';
import { committedOffsets, createTopic, produce } from './kafkaClient.js';
import { scenario } from './disputes.js';
import { failureLog } from './failureLog.js';

const bootstrap = inject('kafkaBootstrap');
const logger = failureLog();
const open: KafkaLog[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((log) => log.close()));
});

/** A listener that keeps what it was told, with the time of each callback. */
class Recorder implements LogListener {
  readonly received: LogRecord[] = [];
  readonly events: Array<{ kind: 'assigned' | 'revoked' | 'revoked-done' | 'lost'; partitions: string[]; atMs: number }> = [];
  readonly failures: Error[] = [];
  constructor(private readonly onRevoked: (tps: readonly TopicPartition[]) => Promise<void> = async () => undefined) {}

  async assigned(tps: readonly TopicPartition[]): Promise<void> {
    this.events.push({ kind: 'assigned', partitions: tps.map(partitionId), atMs: Date.now() });
  }

  async revoked(tps: readonly TopicPartition[]): Promise<void> {
    this.events.push({ kind: 'revoked', partitions: tps.map(partitionId), atMs: Date.now() });
    await this.onRevoked(tps);
    this.events.push({ kind: 'revoked-done', partitions: tps.map(partitionId), atMs: Date.now() });
  }

  async lost(tps: readonly TopicPartition[]): Promise<void> {
    this.events.push({ kind: 'lost', partitions: tps.map(partitionId), atMs: Date.now() });
  }

  failed(error: Error): void {
    this.failures.push(error);
  }

  records(batch: readonly LogRecord[]): void {
    // Synchronous, as the port requires: it only keeps them.
    this.received.push(...batch);
  }

  of(partition: number): LogRecord[] {
    return this.received.filter((r) => r.partition === partition);
  }
}

async function until(what: string, condition: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

function kafkaLog(group: string, options: { sessionTimeoutMs?: number } = {}, maxHeldPerPartition?: number): KafkaLog {
  const log = new KafkaLog({ settings: { bootstrap, group, ...options }, logger, ...(maxHeldPerPartition ? { maxHeldPerPartition } : {}) });
  open.push(log);
  return log;
}

const values = (records: readonly LogRecord[]) => records.map((r) => new TextDecoder().decode(r.value!));

describe('KafkaLog', () => {
  it('delivers every record in offset order per partition and commits exactly the offsets asked for', async () => {
    const { prefix, group } = await scenario('log-commit');
    const topic = `${prefix}in`;
    await createTopic(bootstrap, topic, 2);
    await produce(
      bootstrap,
      topic,
      Array.from({ length: 20 }, (_, i) => ({ key: null, value: `v${i}`, partition: i % 2 })),
    );
    const recorder = new Recorder();
    const log = kafkaLog(group);
    await log.subscribe([topic], recorder);
    await until('20 records', () => recorder.received.length === 20);
    for (const partition of [0, 1]) {
      const offsets = recorder.of(partition).map((r) => r.offset);
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      expect(offsets).toEqual(Array.from({ length: 10 }, (_, i) => i));
    }
    // One assignment, each partition handed over on its own as its state is back (cooperative).
    expect(recorder.events.every((e) => e.kind === 'assigned')).toBe(true);
    expect(recorder.events.flatMap((e) => e.partitions).sort()).toEqual([0, 1].map((partition) => partitionId({ topic, partition })));

    await log.commit([{ topic, partition: 0, offset: 4 }]);
    // Settled means the broker has it.
    expect(await committedOffsets(bootstrap, group, topic, 2)).toEqual([4, undefined]);
    await log.commit([
      { topic, partition: 0, offset: 7 },
      { topic, partition: 1, offset: 10 },
    ]);
    expect(await committedOffsets(bootstrap, group, topic, 2)).toEqual([7, 10]);
  });

  it('delivers nothing of a paused partition until it is resumed, then goes on where it stopped', async () => {
    const { prefix, group } = await scenario('log-pause');
    const topic = `${prefix}in`;
    await createTopic(bootstrap, topic, 2);
    const recorder = new Recorder();
    const log = kafkaLog(group);
    await log.subscribe([topic], recorder);
    await until('assignment', () => log.owned().length === 2);
    await produce(
      bootstrap,
      topic,
      [0, 1, 2].map((i) => ({ key: null, value: `a${i}`, partition: 0 })),
    );
    await until('3 records of partition 0', () => recorder.of(0).length === 3);

    log.pause([{ topic, partition: 0 }]);
    await produce(bootstrap, topic, [
      ...[3, 4, 5].map((i) => ({ key: null, value: `a${i}`, partition: 0 })),
      ...[0, 1].map((i) => ({ key: null, value: `b${i}`, partition: 1 })),
    ]);
    await until('partition 1 (not paused) goes on', () => recorder.of(1).length === 2);
    await sleep(1_500);
    expect(values(recorder.of(0))).toEqual(['a0', 'a1', 'a2']);

    log.resume([{ topic, partition: 0 }]);
    await until('partition 0 resumed', () => recorder.of(0).length === 6);
    expect(values(recorder.of(0))).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5']);
    expect(recorder.of(0).map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it("holds a paused partition's records, pauses librdkafka only past maxHeldPerPartition, and hands every record on once, in order, at the resume", async () => {
    const { prefix, group } = await scenario('log-hold');
    const topic = `${prefix}in`;
    await createTopic(bootstrap, topic, 2);
    const fetchPauses = vi.spyOn(rdkafka.KafkaConsumer.prototype, 'pause');
    try {
      const recorder = new Recorder();
      const log = kafkaLog(group, {}, 3);
      await log.subscribe([topic], recorder);
      await until('assignment', () => log.owned().length === 2);
      await produce(bootstrap, topic, [{ key: null, value: 'a0', partition: 0 }]);
      await until('the first record of partition 0', () => recorder.of(0).length === 1);

      log.pause([{ topic, partition: 0 }]);
      await produce(bootstrap, topic, [...[1, 2].map((i) => ({ key: null, value: `a${i}`, partition: 0 })), { key: null, value: 'b0', partition: 1 }]);
      await until('partition 1 (not paused) goes on', () => recorder.of(1).length === 1);
      await sleep(1_000);
      // Two held, below the bound: librdkafka still fetches the partition.
      expect(fetchPauses).not.toHaveBeenCalled();
      await produce(bootstrap, topic, [{ key: null, value: 'a3', partition: 0 }]);
      await until('librdkafka paused at the third held record', () => fetchPauses.mock.calls.length === 1);
      expect(fetchPauses.mock.calls[0]![0]).toEqual([{ topic, partition: 0 }]);
      // Written after librdkafka's pause: only its resume fetches them.
      await produce(
        bootstrap,
        topic,
        [4, 5, 6, 7, 8].map((i) => ({ key: null, value: `a${i}`, partition: 0 })),
      );
      await sleep(1_000);
      expect(values(recorder.of(0))).toEqual(['a0']);

      // The held records first, then librdkafka's fetch from where the application stood: no gap, no record twice.
      log.resume([{ topic, partition: 0 }]);
      await until('partition 0 resumed', () => recorder.of(0).length === 9);
      await sleep(500);
      expect(recorder.of(0).map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
      expect(values(recorder.of(0))).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8']);
    } finally {
      fetchPauses.mockRestore();
    }
  });

  it('fetches a partition again that librdkafka had paused when it was revoked, once it is assigned back', async () => {
    const { prefix, group } = await scenario('log-paused-revoked');
    const topic = `${prefix}in`;
    await createTopic(bootstrap, topic, 2);
    const recorder = new Recorder();
    const first = kafkaLog(group, {}, 1);
    await first.subscribe([topic], recorder);
    await until('assignment', () => first.owned().length === 2);
    const both = [0, 1].map((partition) => ({ topic, partition }));
    first.pause(both);
    await produce(
      bootstrap,
      topic,
      [0, 1].map((partition) => ({ key: null, value: `x${partition}`, partition })),
    );
    // One held of each partition: librdkafka pauses both.
    await sleep(2_000);
    expect(recorder.received).toEqual([]);

    // A second member takes one partition and leaves: it comes back to the first, which resumes it.
    const second = kafkaLog(group);
    await second.subscribe([topic], new Recorder());
    await until('the second member owns one partition', () => second.owned().length === 1 && first.owned().length === 1);
    const moved = second.owned()[0]!.partition;
    await second.close();
    await until('the first member owns both again', () => first.owned().length === 2);
    await produce(bootstrap, topic, [{ key: null, value: `y${moved}`, partition: moved }]);
    // Nothing was committed: the partition is read from its start again, x then y.
    await until(`partition ${moved} fetched again`, () => values(recorder.of(moved)).includes(`y${moved}`), 20_000);
    expect(values(recorder.of(moved))).toEqual([`x${moved}`, `y${moved}`]);
    // The partition that never moved stays paused: its record is still held.
    expect(recorder.of(1 - moved)).toEqual([]);
  });

  it('moves only the partitions that change owner, after the old owner finished and committed them', async () => {
    const { prefix, group } = await scenario('log-rebalance');
    const topic = `${prefix}in`;
    await createTopic(bootstrap, topic, 4);
    await produce(
      bootstrap,
      topic,
      Array.from({ length: 40 }, (_, i) => ({ key: null, value: `v${i}`, partition: i % 4 })),
    );

    // The first owner takes its time to hand over: it finishes, then commits half of what it read.
    let first!: KafkaLog;
    const firstRecorder = new Recorder(async (tps) => {
      await sleep(1_500);
      await first.commit(tps.map((tp) => ({ ...tp, offset: 5 })));
    });
    first = kafkaLog(group);
    await first.subscribe([topic], firstRecorder);
    await until('first owner read everything', () => firstRecorder.received.length === 40);

    const secondRecorder = new Recorder();
    const second = kafkaLog(group);
    await second.subscribe([topic], secondRecorder);
    await until('second owner assigned', () => second.owned().length > 0);
    await until('second owner read its partitions from the committed offset', () => secondRecorder.received.length === 5 * second.owned().length);

    const revoked = firstRecorder.events.filter((e) => e.kind === 'revoked');
    expect(revoked).toHaveLength(1);
    const moved = revoked[0]!.partitions.sort();
    expect(moved).toHaveLength(2);
    // Incremental: the second owner got exactly the moved partitions; the first kept the others.
    expect(second.owned().map(partitionId).sort()).toEqual(moved);
    expect(first.owned().map(partitionId).sort()).toEqual(['0', '1', '2', '3'].map((p) => `${topic}/${p}`).filter((p) => !moved.includes(p)));
    // Assigned to the second only after the first's revoked() settled (and committed).
    const done = firstRecorder.events.find((e) => e.kind === 'revoked-done')!;
    const assigned = secondRecorder.events.find((e) => e.kind === 'assigned' && e.partitions.length > 0)!;
    expect(assigned.atMs).toBeGreaterThanOrEqual(done.atMs);
    expect(secondRecorder.received.every((r) => r.offset >= 5)).toBe(true);
    expect(firstRecorder.events.filter((e) => e.kind === 'assigned').flatMap((e) => e.partitions)).toHaveLength(4);
  });

  it('fails with an error naming a missing source topic, and creates missing output topics with its partition count', async () => {
    const { prefix, group } = await scenario('log-topics');
    const settings = { bootstrap, group };
    await expect(ensureTopics(settings, logger, { source: `${prefix}missing`, outputs: [`${prefix}out`] })).rejects.toThrow(
      new TopicError(
        `${prefix}missing`,
        `source topic '${prefix}missing' does not exist on ${bootstrap}; create it first (orderly does not choose the partition count of its input)`,
      ),
    );
    await createTopic(bootstrap, `${prefix}in`, 3);
    expect(await ensureTopics(settings, logger, { source: `${prefix}in`, outputs: [`${prefix}out`, `${prefix}in.dlq`] })).toEqual({ sourcePartitions: 3 });
    // Idempotent: a second worker finds them.
    expect(await ensureTopics(settings, logger, { source: `${prefix}in`, outputs: [`${prefix}out`, `${prefix}in.dlq`] })).toEqual({ sourcePartitions: 3 });
    const admin = rdkafka.AdminClient.create({ 'bootstrap.servers': bootstrap });
    try {
      const describe = () =>
        new Promise<Array<{ name: string; partitions: unknown[] }>>((resolve, reject) =>
          admin.describeTopics([`${prefix}out`, `${prefix}in.dlq`], { timeout: 10_000 }, (error, result) => (error ? reject(error) : resolve(result))),
        );
      // A created topic reaches the broker's metadata a moment after the controller answered: under
      // load, describe can see it with no partitions yet. Its partition count is what is checked.
      let counts = (await describe()).map((t) => t.partitions.length);
      for (const deadline = Date.now() + 15_000; counts.includes(0) && Date.now() < deadline;) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        counts = (await describe()).map((t) => t.partitions.length);
      }
      expect(counts).toEqual([3, 3]);
    } finally {
      admin.disconnect();
    }
  });
});
