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
    // Everything handed over is written at once.
    flush(_timeoutMs: number, cb: (error: null) => void) {
      setImmediate(() => cb(null));
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
    const a = acked.produce([record('a1'), record('a2')]);
    const b = acked.produce([record('b1')]);
    // Refused, then retried: nothing produced yet, and b1 does not overtake a1 and a2.
    expect(produced).toEqual([]);
    // Acknowledged: the flush that covered them is over (a write made during a flush waits for its end).
    await Promise.all([a, b]);
    expect(produced).toEqual(['a1', 'a2', 'b1']);
    // With room in the queue and no flush running, a write is handed over at once.
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
      // Flushes under way, each ended by the test: end(error?) as librdkafka's flush callback.
      const flushes: Array<{ handedOver: number; end: (error?: { message: string; code: number }) => void }> = [];
      const producer = {
        produce(topic: string, partition: number, _value: Buffer | null, key: string, _ts: null, opaque: unknown) {
          produced.push({ topic, partition, key, opaque });
        },
        flush(_timeoutMs: number, cb: (error: unknown) => void) {
          flushes.push({ handedOver: produced.length, end: (error) => cb(error ?? null) });
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
      return { acked, produced, fatal, report, flushes };
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

    it('without transactions, a flush acknowledges every call handed over before it began; calls made meanwhile wait for it, then go together', async () => {
      const { acked, produced, flushes } = recording(false);
      const first = acked.produce([at('a', 0, 'a0-1'), at('a', 1, 'a1-1')]);
      const second = acked.produce([at('b', 0, 'b0-1')]);
      // No opaque: librdkafka reports failures only.
      expect(produced.map((p) => p.opaque)).toEqual([undefined, undefined, undefined]);
      // One flush for the calls of one turn, at its end.
      expect(flushes).toHaveLength(0);
      await new Promise((resolve) => setImmediate(resolve));
      expect(flushes).toHaveLength(1);
      // Made while the flush runs: held back, since librdkafka's flush would wait for it too.
      const third = acked.produce([at('a', 0, 'a0-2')]);
      expect(produced).toHaveLength(3);
      expect(await settled(first)).toBe(false);
      flushes[0]!.end();
      await expect(first).resolves.toBeUndefined();
      await expect(second).resolves.toBeUndefined();
      expect(await settled(third)).toBe(false);
      expect(produced.map((p) => p.key)).toEqual(['a0-1', 'a1-1', 'b0-1', 'a0-2']);
      await new Promise((resolve) => setImmediate(resolve));
      expect(flushes).toHaveLength(2);
      flushes[1]!.end();
      await expect(third).resolves.toBeUndefined();
    });

    it('a failure reported before the flush ends fails every call not settled, and stops: the flush acknowledges nothing', async () => {
      const { acked, report, fatal, flushes, produced } = recording(false);
      const call = acked.produce([at('a', 0, 'a0-1'), at('a', 0, 'a0-2')]);
      await new Promise((resolve) => setImmediate(resolve));
      const held = acked.produce([at('a', 0, 'a0-3')]);
      // The report comes in the same turn as the flush's end, after it: heard all the same.
      flushes[0]!.end();
      report(0, { message: 'Broker: Message size too large', code: 10 });
      await expect(call).rejects.toThrow(/Message size too large.*max\.message\.bytes/);
      await expect(held).rejects.toThrow(/producer stopped/);
      expect(fatal).toHaveLength(1);
      await expect(acked.produce([at('a', 0, 'later')])).rejects.toThrow(/producer stopped/);
      expect(produced.map((p) => p.key)).toEqual(['a0-1', 'a0-2']);
    });

    it('a flush that times out is run again; the calls settle when one ends', async () => {
      const { acked, flushes } = recording(false);
      const call = acked.produce([at('a', 0, 'a0-1')]);
      await new Promise((resolve) => setImmediate(resolve));
      flushes[0]!.end({ message: 'Local: Timed out', code: -185 });
      await new Promise((resolve) => setImmediate(resolve));
      expect(await settled(call)).toBe(false);
      expect(flushes).toHaveLength(2);
      flushes[1]!.end();
      await expect(call).resolves.toBeUndefined();
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
