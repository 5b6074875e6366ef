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
});
