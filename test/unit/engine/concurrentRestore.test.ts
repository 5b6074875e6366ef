// Partitions given to the engine at once are restored side by side: one whose state is back runs
// while another still restores (issue 15 §5: a restarted worker sat idle until the last partition
// of its assignment was restored, one after another).
import { describe, expect, it } from 'vitest';
import { Engine } from '../../../src/engine/engine.js';
import type { LogRecord, TopicPartition } from '../../../src/ports/log.js';
import type { Store } from '../../../src/ports/store.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { SeededRandom } from '../../../testkit/seededRandom.js';
import { VirtualClock } from '../../../testkit/virtualClock.js';
import { decisionTopology, type Ev } from '../../driver/helpers.js';
import { handDrivenLog } from './handDrivenLog.js';

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
const tp = (partition: number): TopicPartition => ({ topic: 'events', partition });

describe('the engine takes partitions over side by side', () => {
  it('a partition whose state is back runs its events while another of the same assignment still restores', async () => {
    const clock = new VirtualClock();
    const memory = await openMemoryStore();
    const opened: string[] = [];
    let releaseSlow!: () => void;
    const slow = new Promise<void>((resolve) => (releaseSlow = resolve));
    // The store restores partition 1 slowly (a large changelog), the others at once.
    const store: Store = Object.assign(Object.create(memory) as Store, {
      openPartition: async (p: TopicPartition) => {
        opened.push(`open ${p.partition}`);
        if (p.partition === 1) await slow;
        opened.push(`restored ${p.partition}`);
      },
    });
    const { log, listener } = handDrivenLog(tp(0));
    const fatal: Error[] = [];
    const engine = new Engine({
      topology: decisionTopology(async () => ({ action: 'refund' })),
      log,
      clock: clock.view('engine'),
      store,
      random: new SeededRandom(1),
      commit: 'each',
      observer: { fatal: (error) => fatal.push(error) },
    });
    await engine.start();
    let assignedSettled = false;
    const assigning = listener()
      .assigned([tp(1), tp(2)])
      .then(() => (assignedSettled = true));
    await flush();
    // Both restores started; partition 2 is back, partition 1 is not.
    expect(opened).toEqual(['open 0', 'restored 0', 'open 1', 'open 2', 'restored 2']);
    const record = (partition: number, offset: number, ev: Ev): LogRecord => ({
      ...tp(partition),
      offset,
      key: ev.id,
      value: new TextEncoder().encode(JSON.stringify(ev)),
      timestampMs: 0,
      headers: {},
    });
    // The log hands partition 2's records over as soon as its state is back (KafkaLog does so per partition).
    listener().records([record(2, 0, { id: 'b1' })]);
    for (let i = 0; i < 5; i += 1) {
      clock.fireNext();
      await flush();
    }
    expect(engine.metrics().outcomes.APPLIED, 'partition 2 ran its event while partition 1 restores').toBe(1);
    expect(assignedSettled).toBe(false);
    releaseSlow();
    await assigning;
    listener().records([record(1, 0, { id: 'a1' })]);
    for (let i = 0; i < 5; i += 1) {
      clock.fireNext();
      await flush();
    }
    expect(engine.metrics().outcomes.APPLIED).toBe(2);
    expect(fatal).toEqual([]);
    await engine.stop();
  });
});
