import { describe, expect, it } from 'vitest';
import { EffectHorizon, HORIZON_STEP } from '../../../src/engine/effectHorizon.js';
import { eventEndFor } from '../../../src/engine/eventEnd.js';
import { StateWriter } from '../../../src/engine/stateWriter.js';
import type { Log } from '../../../src/ports/log.js';
import type { Store, StoreOp } from '../../../src/ports/store.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { stateKeys } from '../../../src/state/stateKeys.js';

const tp = { topic: 'payments', partition: 2 };
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A horizon over a memory store, with every batch written through it and every fatal error kept. */
async function setup(before: StoreOp[] = [], failWrites = false) {
  const memory = await openMemoryStore();
  if (before.length > 0) await memory.batch(before);
  const batches: StoreOp[][] = [];
  const store: Store = {
    location: 'memory',
    get: (key) => memory.get(key),
    entries: (prefix, options) => memory.entries(prefix, options),
    batch: async (ops) => {
      if (failWrites) throw new Error('disk full');
      batches.push([...ops]);
      await memory.batch(ops);
    },
    close: () => memory.close(),
  };
  const fatal: Error[] = [];
  const writer = new StateWriter(store);
  // A log without transactions: the horizon's write is made as it is asked for (the log is never called).
  const end = eventEndFor({} as Log, writer);
  const horizon = new EffectHorizon(store, writer, end, 'ledger', tp, (error) => fatal.push(error));
  await horizon.load();
  return { horizon, memory, batches, fatal, stored: () => memory.get<number>(stateKeys.horizon('ledger', tp)) };
}

describe('EffectHorizon', () => {
  it('a partition with nothing recorded: every event is past it, and each step of offsets is reserved once, ahead', async () => {
    const { horizon, batches, stored } = await setup();
    expect(horizon.beyond(0)).toBe(true);
    horizon.received(0);
    horizon.received(1);
    horizon.received(HORIZON_STEP - 1);
    await flush();
    expect(stored()).toBe(HORIZON_STEP);
    expect(batches).toHaveLength(1);
    horizon.received(HORIZON_STEP + 5);
    await flush();
    expect(stored()).toBe(2 * HORIZON_STEP + 5);
    expect(batches).toHaveLength(2);
    // What counts for lookups is the horizon read at take-over: events received since are new too.
    expect(horizon.beyond(HORIZON_STEP + 5)).toBe(true);
  });

  it('taken over with a stored horizon: events before it are looked up, events at or past it are not', async () => {
    const { horizon, batches } = await setup([{ type: 'put', key: stateKeys.horizon('ledger', tp), value: 120 }]);
    expect(horizon.beyond(119)).toBe(false);
    expect(horizon.beyond(120)).toBe(true);
    horizon.received(100);
    await flush();
    expect(batches).toHaveLength(0);
    horizon.received(120);
    await flush();
    expect(batches).toEqual([[{ type: 'put', key: stateKeys.horizon('ledger', tp), value: 120 + HORIZON_STEP }]]);
  });

  it('a partition with effect records but no horizon (older state) looks every event up and writes no horizon', async () => {
    const { horizon, batches } = await setup([{ type: 'put', key: stateKeys.effect('ledger', tp, 'payments/2/7'), value: { offset: 7 } }]);
    expect(horizon.beyond(0)).toBe(false);
    expect(horizon.beyond(1_000_000)).toBe(false);
    horizon.received(1_000_000);
    await flush();
    expect(batches).toHaveLength(0);
  });

  it('a partition with ring records and no horizon (older state whose records by effect id were all pruned since) looks every event up', async () => {
    const { horizon, batches } = await setup([{ type: 'put', key: stateKeys.ring('ledger', tp, 9), value: { offset: 9 } }]);
    expect(horizon.beyond(0)).toBe(false);
    expect(horizon.beyond(1_000_000)).toBe(false);
    expect(horizon.recordedBefore).toBe(Number.POSITIVE_INFINITY);
    horizon.received(1_000_000);
    await flush();
    expect(batches).toHaveLength(0);
  });

  it('a failed horizon write is fatal: effects past the stored horizon must not be recorded', async () => {
    const { horizon, fatal } = await setup([], true);
    horizon.received(0);
    await flush();
    await flush();
    expect(fatal.map((e) => e.message)).toEqual(['the effect horizon of payments/2 could not be written: disk full']);
  });
});
