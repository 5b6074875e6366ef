import { describe, expect, it } from 'vitest';
import { Engine } from '../../../src/engine/engine.js';
import { PARK_REASON_HEADER } from '../../../src/engine/parkRecords.js';
import type { LogRecord } from '../../../src/ports/log.js';
import type { Store } from '../../../src/ports/store.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { SeededRandom } from '../../../testkit/seededRandom.js';
import { VirtualClock } from '../../../testkit/virtualClock.js';
import { decisionTopology, type Ev } from '../../driver/helpers.js';
import { handDrivenLog } from './handDrivenLog.js';

const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};
const tp = { topic: 'events', partition: 0 };

/** One key: p0 is poison (parked after its one attempt), p1 is held behind it. */
const records: LogRecord[] = [{ id: 'p0', bad: true }, { id: 'p1' }].map((ev: Ev, offset) => ({
  ...tp,
  offset,
  key: 'k',
  value: new TextEncoder().encode(JSON.stringify(ev)),
  timestampMs: 0,
  headers: {},
}));

/** An engine instance over `store` and a log driven by hand, delivering every record; returns what it produced to the parking topic. */
async function deliverAll(store: Store, atomic: boolean): Promise<string[]> {
  const { log, produced, listener } = handDrivenLog(tp, { atomic });
  const engine = new Engine({
    topology: decisionTopology((event) => (event.bad ? { action: 'unknown' } : { action: 'refund' }), { attempts: 1 }),
    log,
    clock: new VirtualClock().view('engine'),
    store,
    random: new SeededRandom(1),
    commit: 'each',
  });
  await engine.start();
  listener().records(records);
  await flush();
  await engine.stop();
  return produced.filter((r) => r.topic === 'events.parked').map((r) => `${r.headers![PARK_REASON_HEADER]} ${r.headers!['orderly-effect-id']}`);
}

describe('a redelivered event that is already parked or held', () => {
  it('at-least-once: its park record is sent again (a crash may have come between the parking and its record)', async () => {
    const store = await openMemoryStore();
    expect(await deliverAll(store, false)).toEqual(['POISON events/0/0', 'HELD events/0/1']);
    // The offsets were never committed by the log here: a new instance gets both again.
    expect(await deliverAll(store, false)).toEqual(['POISON events/0/0', 'HELD events/0/1']);
  });

  it('exactly-once: its park record is not sent again, it was committed with the parking', async () => {
    const store = await openMemoryStore();
    expect(await deliverAll(store, true)).toEqual(['POISON events/0/0', 'HELD events/0/1']);
    expect(await deliverAll(store, true)).toEqual([]);
  });
});
