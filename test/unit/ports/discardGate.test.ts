import { describe, expect, it } from 'vitest';
import { DiscardGate } from '../../../src/ports/discardGate.js';

/** A unit of `partition` entering the transaction: it waits while the gate holds it back. */
async function enter(gate: DiscardGate, partition: string): Promise<void> {
  for (let wait = gate.heldBack(partition); wait; wait = gate.heldBack(partition)) await wait;
}

/** Settles with 'stuck' if `promise` has not settled once pending callbacks have run. */
async function settledSoon<T>(promise: Promise<T>): Promise<T | 'stuck'> {
  return Promise.race([promise, new Promise<'stuck'>((resolve) => setTimeout(() => resolve('stuck'), 50))]);
}

describe('DiscardGate', () => {
  it('holds back units of partitions the transaction did not touch until it opens, and lets those of dropped ones in', async () => {
    const gate = new DiscardGate();
    gate.close();
    let otherEntered = false;
    const other = enter(gate, 't/2').then(() => (otherEntered = true));
    const dropped = await gate.dropTouched(
      () => new Set(['t/1']),
      async () => {
        expect(await settledSoon(enter(gate, 't/1'))).toBeUndefined();
      },
    );
    expect(dropped).toEqual(new Set(['t/1']));
    expect(otherEntered).toBe(false);
    gate.open();
    await other;
    expect(otherEntered).toBe(true);
  });

  it('drops lost partitions the transaction never touched, and lets their units in: the drop waits for them', async () => {
    const gate = new DiscardGate();
    gate.close();
    // The drop waits for the lost partition's unit to end, as the engine's loss of a partition
    // waits for its work in flight: held back, that unit would wait for the drop in turn.
    const dropping = gate.dropTouched(
      () => new Set(['t/1']),
      () => enter(gate, 't/0'),
      new Set(['t/0']),
    );
    expect(await settledSoon(dropping)).toEqual(new Set(['t/0', 't/1']));
    gate.open();
  });
});
