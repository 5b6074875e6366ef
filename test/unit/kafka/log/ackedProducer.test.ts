import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AckedProducer } from '../../../../src/kafka/log/ackedProducer.js';
import type { OutRecord } from '../../../../src/ports/log.js';

// The order in which records reach librdkafka, over a stand-in for its producer whose queue is
// full for a while (acknowledgements need the broker: test/kafka covers them).

const QUEUE_FULL = -184;

function fullFor(refusals: number) {
  const produced: string[] = [];
  let left = refusals;
  const producer = {
    produce(_topic: string, _partition: number, _value: Buffer | null, key: string) {
      if (key === 'bad') throw Object.assign(new Error('message too large'), { code: 10 });
      if (left > 0) {
        left -= 1;
        throw Object.assign(new Error('Local: Queue full'), { code: QUEUE_FULL });
      }
      produced.push(key);
    },
  };
  const fatal: Error[] = [];
  const Ctor = AckedProducer as unknown as new (producer: unknown, logger: unknown, onFatal: (error: Error) => void, transactional: boolean) => AckedProducer;
  return { acked: new Ctor(producer, pino({ level: 'silent' }), (error) => fatal.push(error), false), produced, fatal };
}

const record = (key: string): OutRecord => ({ topic: 't', partition: 0, key, value: new TextEncoder().encode(key) });
const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('AckedProducer', () => {
  it('hands records over in call order, also when they waited for room in a full queue', async () => {
    const { acked, produced } = fullFor(3);
    void acked.produce([record('a1'), record('a2')]);
    void acked.produce([record('b1')]);
    // Refused, then retried: nothing produced yet, and b1 does not overtake a1 and a2.
    expect(produced).toEqual([]);
    await until(() => produced.length === 3);
    expect(produced).toEqual(['a1', 'a2', 'b1']);
    void acked.produce([record('c1')]);
    expect(produced).toEqual(['a1', 'a2', 'b1', 'c1']);
  });

  it('lets no record overtake one that did not fit, even when the queue has room again at once', async () => {
    const { acked, produced } = fullFor(1);
    void acked.produce([record('a1'), record('a2')]);
    void acked.produce([record('b1')]);
    expect(produced).toEqual([]);
    await until(() => produced.length === 3);
    expect(produced).toEqual(['a1', 'a2', 'b1']);
  });

  it('rejects a call whose record librdkafka refuses for good, and then stops: nothing is produced after it', async () => {
    const { acked, produced, fatal } = fullFor(0);
    await expect(acked.produce([record('ok'), record('bad')])).rejects.toThrow('message too large');
    expect(produced).toEqual(['ok']);
    expect(fatal).toHaveLength(1);
    await expect(acked.produce([record('later')])).rejects.toThrow(/producer stopped: a record failed for good/);
    expect(produced).toEqual(['ok']);
    await expect(acked.produce([])).resolves.toBeUndefined();
  });

  it('fails the calls still waiting for room in the queue when a record fails for good, and never hands them over', async () => {
    const { acked, produced } = fullFor(1);
    const first = acked.produce([record('a1')]);
    const second = acked.produce([record('bad'), record('b2')]);
    const third = acked.produce([record('c1')]);
    await expect(second).rejects.toThrow('message too large');
    await expect(third).rejects.toThrow(/producer stopped/);
    await expect(first).rejects.toThrow(/producer stopped/);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(produced).toEqual(['a1']);
  });

  describe('acknowledgements', () => {
    // A stand-in that keeps each record's opaque; delivery reports are handed to the producer as librdkafka's would be.
    function recording(transactional: boolean) {
      const produced: Array<{ topic: string; partition: number; key: string; opaque: unknown }> = [];
      const producer = {
        produce(topic: string, partition: number, _value: Buffer | null, key: string, _ts: null, opaque: unknown) {
          produced.push({ topic, partition, key, opaque });
        },
      };
      const fatal: Error[] = [];
      const Ctor = AckedProducer as unknown as new (
        producer: unknown,
        logger: unknown,
        onFatal: (error: Error) => void,
        transactional: boolean,
      ) => AckedProducer;
      const acked = new Ctor(producer, pino({ level: 'silent' }), (error) => fatal.push(error), transactional);
      const report = (i: number, error: { message: string; code: number } | null = null) => {
        const { topic, partition, opaque } = produced[i]!;
        (acked as unknown as { delivered(error: unknown, report: unknown): void }).delivered(error, { topic, partition, opaque });
      };
      return { acked, produced, fatal, report };
    }
    const at = (topic: string, partition: number | undefined, key: string): OutRecord => ({
      topic,
      ...(partition === undefined ? {} : { partition }),
      key,
      value: new TextEncoder().encode(key),
    });
    const settled = async (promise: Promise<unknown>) => {
      let done = false;
      promise.then(
        () => (done = true),
        () => (done = true),
      );
      await new Promise((resolve) => setTimeout(resolve, 0));
      return done;
    };

    it("without transactions, waits for the last record of each partition only: its acknowledgement vouches for the partition's earlier ones", async () => {
      const { acked, produced, report } = recording(false);
      const call = acked.produce([
        at('a', 0, 'a0-1'),
        at('a', 1, 'a1-1'),
        at('a', 0, 'a0-2'),
        at('b', 0, 'b0-1'),
        at('a', 1, 'a1-2'),
        at('o', undefined, 'o-1'),
      ]);
      // The last of a/0, a/1 and b/0 carry the call; so does the record whose partition the partitioner picks.
      expect(produced.map((p) => p.opaque !== undefined)).toEqual([false, false, true, true, true, true]);
      for (const i of [0, 1, 2, 3, 4]) report(i);
      expect(await settled(call)).toBe(false);
      report(5);
      await expect(call).resolves.toBeUndefined();
    });

    it('fails the call, and stops, when a record without the call as its opaque is refused', async () => {
      const { acked, report, fatal } = recording(false);
      const call = acked.produce([at('a', 0, 'a0-1'), at('a', 0, 'a0-2')]);
      report(0, { message: 'Broker: Message size too large', code: 10 });
      await expect(call).rejects.toThrow(/Message size too large.*max\.message\.bytes/);
      expect(fatal).toHaveLength(1);
      await expect(acked.produce([at('a', 0, 'later')])).rejects.toThrow(/producer stopped/);
    });

    it('in a transaction, waits for every record, so that a refused one fails its call at once', async () => {
      const { acked, produced, report } = recording(true);
      const call = acked.produce([at('a', 0, 'a0-1'), at('a', 0, 'a0-2')]);
      expect(produced.map((p) => p.opaque !== undefined)).toEqual([true, true]);
      report(1);
      expect(await settled(call)).toBe(false);
      report(0, { message: 'Broker: Message size too large', code: 10 });
      await expect(call).rejects.toThrow(/Message size too large/);
    });
  });
});
