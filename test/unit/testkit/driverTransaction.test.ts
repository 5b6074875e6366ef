import { describe, expect, it } from 'vitest';
import type { StoreOp } from '../../../src/ports/store.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { DriverTransaction } from '../../../testkit/driverTransaction.js';
import { LandedOverlay } from '../../../testkit/landedOverlay.js';
import { MemoryLog } from '../../../testkit/memoryLog.js';
import { deferred } from '../deferred.js';

const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

async function transaction() {
  const state = await openMemoryStore();
  const overlay = new LandedOverlay(() => state);
  const log = new MemoryLog(1);
  const durable: StoreOp[][] = [];
  const tx = new DriverTransaction(
    overlay,
    () => state,
    log,
    () => 0,
    (ops) => void durable.push([...ops]),
  );
  return { state, overlay, log, durable, tx };
}

describe('DriverTransaction', () => {
  it('a commit waits for the running units, and units asked for meanwhile wait for the commit', async () => {
    const { tx } = await transaction();
    const steps: string[] = [];
    const first = deferred();
    const unitA = tx.unit(async () => {
      steps.push('A starts');
      await first.promise;
      steps.push('A ends');
    });
    await flush();
    // As DriverConsumer commits: drain, commit, let units in again.
    const commit = (async () => {
      await tx.drain();
      steps.push('commit');
      await tx.commit();
      tx.reopenUnits();
    })();
    const unitB = tx.unit(async () => void steps.push('B runs'));
    await flush();
    expect(steps).toEqual(['A starts']);
    first.resolve();
    await Promise.all([unitA, commit, unitB]);
    expect(steps).toEqual(['A starts', 'A ends', 'commit', 'B runs']);
  });

  it('its records reach the log at the commit, once; a transaction never committed appends none', async () => {
    const { log, tx } = await transaction();
    tx.send([{ topic: 'out', key: 'first', value: null }]);
    expect(tx.holdsWrites).toBe(true);
    expect(log.appended('out')).toEqual([]);
    await tx.commit();
    await tx.commit();
    expect(log.appended('out').map((r) => r.key)).toEqual(['first']);
    expect(tx.holdsWrites).toBe(false);
    // A crash drops the instance with its open transaction: what it sent never shows.
    tx.send([{ topic: 'out', key: 'second', value: null }]);
    const { log: afterCrash } = await transaction();
    expect(afterCrash.appended('out')).toEqual([]);
    expect(log.appended('out').map((r) => r.key)).toEqual(['first']);
  });

  it('its state writes become durable at the commit, in landing order; until then only the overlay holds them', async () => {
    const { state, overlay, durable, tx } = await transaction();
    await state.batch([{ type: 'put', key: 'a', value: 1 }]);
    tx.hold(
      overlay.land([
        { type: 'put', key: 'a', value: 2 },
        { type: 'put', key: 'b', value: 1 },
      ]),
    );
    tx.hold(
      overlay.land([
        { type: 'put', key: 'a', value: 3 },
        { type: 'del', key: 'b' },
      ]),
    );
    expect(overlay.get('a')).toBe(3);
    expect(state.get('a')).toBe(1);
    expect(state.get('b')).toBeUndefined();
    await tx.commit();
    expect(state.get('a')).toBe(3);
    expect(state.get('b')).toBeUndefined();
    expect(overlay.pending).toBe(0);
    expect(durable).toHaveLength(2);
  });
});
