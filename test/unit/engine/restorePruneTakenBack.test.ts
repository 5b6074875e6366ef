// Exactly-once: a transaction that fails right after a partition is (re)assigned takes back the
// restore's prune of leftover effect records (seen on the broker: the transaction after a reset
// failed again). Those deletes are found again at the next restore, so the take-over goes on; it
// used to fail the rebalance step, and the worker stopped.
import { describe, expect, it } from 'vitest';
import { Engine } from '../../../src/engine/engine.js';
import type { DecideFn } from '../../../src/graph/nodes.js';
import { PartitionResetError, type Log, type LogRecord } from '../../../src/ports/log.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { stateKeys } from '../../../src/state/stateKeys.js';
import { SeededRandom } from '../../../testkit/seededRandom.js';
import { VirtualClock } from '../../../testkit/virtualClock.js';
import { decisionTopology, type Ev } from '../../driver/helpers.js';
import { handDrivenLog } from './handDrivenLog.js';

const tp = { topic: 'events', partition: 0 };
const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe('a partition taken over on an exactly-once log', () => {
  it('goes on when the transaction takes back the prune of its leftover effect records', async () => {
    const store = await openMemoryStore();
    // An effect record below the committed offset (1), left by an earlier owner: pruned at assignment.
    const effectId = 'events/0/0';
    await store.batch([
      {
        type: 'put',
        key: stateKeys.effect('fx', tp, effectId),
        value: { effectId, topic: 'events', partition: 0, offset: 0, key: 'k', appliedAtMs: 0, outputs: [] },
      },
    ]);
    const hand = handDrivenLog(tp, { atomic: true, committed: { offset: 1 } });
    let units = 0;
    const log: Log = {
      ...hand.log,
      // The first unit (the restore's prune) runs, then its transaction fails under it.
      atomic: async <T>(work: () => Promise<T>): Promise<T> => {
        const result = await work();
        if ((units += 1) === 1) throw new PartitionResetError('the transaction failed under this write (a fault of the test)');
        return result;
      },
    };
    const decide: DecideFn<Ev, unknown> = () => ({ action: 'refund' });
    const fatal: Error[] = [];
    const engine = new Engine({
      topology: decisionTopology(decide),
      log,
      clock: new VirtualClock().view('engine'),
      store,
      random: new SeededRandom(1),
      commit: 'each',
      observer: { fatal: (error) => fatal.push(error) },
    });
    await engine.start();
    expect(units, 'the prune ran as a unit').toBe(1);
    const record: LogRecord = {
      ...tp,
      offset: 1,
      key: 'k',
      value: new TextEncoder().encode(JSON.stringify({ id: 'a' } satisfies Ev)),
      timestampMs: 0,
      headers: {},
    };
    hand.listener().records([record]);
    await flush();
    expect(fatal).toEqual([]);
    expect(engine.metrics().outcomes.APPLIED).toBe(1);
    expect(hand.commits.at(-1)).toEqual([{ ...tp, offset: 2 }]);
    await engine.stop();
  });
});
