import { afterEach, describe, expect, it } from 'vitest';
import type { DecideFn } from '../../src/graph/nodes.js';
import { TopologyTestDriver, type DriverMode } from '../../testkit/driver.js';
import { decisionTopology, outcomesAt, type Ev, type Out } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

const refund: DecideFn<Ev, unknown> = () => ({ action: 'refund' });

function start(mode: DriverMode, onApply?: (id: string) => void) {
  driver = new TopologyTestDriver(decisionTopology(refund, onApply ? { onApply: (v) => onApply(v.event.id) } : {}), { mode, commit: 'each' });
  const input = driver.createInputTopic<Ev>('events');
  const out = driver.createOutputTopic<Out>('out');
  return { driver, input, out };
}

describe('the staged store (mode staged)', () => {
  it('loses a landed write at a crash before its acknowledgement: the event is uncommitted and applied again, once', async () => {
    const applied: string[] = [];
    const { driver, input } = start('staged', (id) => applied.push(id));
    input.pipeInput('a', { id: 'a1' });
    driver.crash({ point: 'landed-not-durable' });
    await driver.runUntilIdle();
    expect(driver.running).toBe(false);
    // Landed, never durable: neither the effect record nor the offset survived.
    expect(driver.effects()).toEqual([]);
    expect(driver.committed()[0]!.offset).toBe(0);
    driver.restart();
    await driver.runUntilIdle();
    expect(applied).toEqual(['a1', 'a1']);
    expect(driver.effects().map((e) => e.effectId)).toEqual(['events/0/0']);
    expect(driver.metrics().doubleEffects).toBe(0);
    expect(driver.committed()[0]!.offset).toBe(1);
  });

  it('lets the next event of a key read the state its predecessor landed before that state is durable', async () => {
    const { driver, input } = start('staged');
    input.pipeInput('a', { id: 'a1' });
    input.pipeInput('a', { id: 'a2' });
    await driver.runUntilIdle();
    expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED']);
    expect(outcomesAt(driver, 0, 1)).toEqual(['APPLIED']);
    expect(driver.committed()[0]!.offset).toBe(2);
  });
});

describe('the transactional log (mode exactlyOnce)', () => {
  it('aborts the open transaction at a crash: no output is visible, and after the restart each is visible once', async () => {
    const { driver, input, out } = start('exactlyOnce');
    input.pipeInput('a', { id: 'a1' });
    input.pipeInput('b', { id: 'b1' });
    driver.crash({ point: 'transaction-open' });
    await driver.runUntilIdle();
    expect(driver.running).toBe(false);
    expect(out.readValuesToList()).toEqual([]);
    expect(driver.effects()).toEqual([]);
    expect(driver.committed()[0]!.offset).toBe(0);
    driver.restart();
    await driver.runUntilIdle();
    expect(
      out
        .readValuesToList()
        .map((o) => o.id)
        .sort(),
    ).toEqual(['a1', 'b1']);
    expect(driver.committed()[0]!.offset).toBe(2);
  });

  it('keeps a committed transaction when the crash comes right after it: the restart sends nothing again', async () => {
    const { driver, input, out } = start('exactlyOnce');
    input.pipeInput('a', { id: 'a1' });
    driver.crash({ point: 'transaction-committed' });
    await driver.runUntilIdle();
    expect(driver.running).toBe(false);
    expect(out.readValuesToList().map((o) => o.id)).toEqual(['a1']);
    driver.restart();
    await driver.runUntilIdle();
    // Committed with its offset: not redelivered, nothing sent again.
    expect(out.readValuesToList()).toEqual([]);
    expect(driver.metrics().redeliveries).toBe(0);
  });

  it("resets the owned partitions whose work the transaction held with a lost one, as Kafka's log does: the transaction is aborted, the local state restored, the events run again", async () => {
    const applied: string[] = [];
    driver = new TopologyTestDriver(decisionTopology(refund, { onApply: (v) => applied.push(v.event.id) }), {
      mode: 'exactlyOnce',
      partitions: 2,
      commit: { everyMs: 5_000 },
    });
    const input = driver.createInputTopic<Ev>('events');
    const out = driver.createOutputTopic<Out>('out');
    input.pipeInput('a', { id: 'a1' }, { partition: 0 });
    input.pipeInput('b', { id: 'b1' }, { partition: 1 });
    await driver.advanceWallClockTime(1_000);
    expect(applied).toEqual(['a1', 'b1']);
    // Both applied in the open transaction; partition 0 is lost (this worker was fenced out).
    await driver.revoke([0], { lost: true });
    expect(driver.metrics().partitionResets).toBe(1);
    expect(out.readValuesToList()).toEqual([]);
    expect(driver.effects()).toEqual([]);
    // Partition 1's b1 was in the transaction too, so it was reset with it: its state went back to
    // the committed one, and b1 runs again.
    await driver.advanceWallClockTime(1_000);
    expect(applied).toEqual(['a1', 'b1', 'b1']);
    expect(outcomesAt(driver, 1, 0)).toEqual(['APPLIED', 'APPLIED']);
    await driver.assign([0]);
    await driver.advanceWallClockTime(6_000);
    expect(
      out
        .readValuesToList()
        .map((o) => o.id)
        .sort(),
    ).toEqual(['a1', 'b1']);
    expect(
      driver
        .effects()
        .map((e) => e.effectId)
        .sort(),
    ).toEqual(['events/0/0', 'events/1/0']);
    expect(driver.committed().map((c) => c.offset)).toEqual([1, 1]);
  });

  it('resets only the partitions whose work the aborted transaction held: the others go on, nothing of theirs lost or applied twice', async () => {
    const applied: string[] = [];
    const assigned: number[] = [];
    let answerB2: (() => void) | undefined;
    // b2's model call is answered only when the test says so: it is in flight across the reset.
    const decide: DecideFn<Ev, unknown> = (event) =>
      event.id === 'b2' ? new Promise((resolve) => (answerB2 = () => resolve({ action: 'refund' }))) : { action: 'refund' };
    driver = new TopologyTestDriver(decisionTopology(decide, { onApply: (v) => applied.push(v.event.id) }), {
      mode: 'exactlyOnce',
      partitions: 2,
      commit: { everyMs: 5_000 },
      observer: { resumed: (r) => assigned.push(r.partition) },
    });
    const input = driver.createInputTopic<Ev>('events');
    const out = driver.createOutputTopic<Out>('out');
    input.pipeInput('b', { id: 'b1' }, { partition: 1 });
    await driver.advanceWallClockTime(6_000);
    expect(out.readValuesToList().map((o) => o.id)).toEqual(['b1']);
    input.pipeInput('b', { id: 'b2' }, { partition: 1 });
    await driver.advanceWallClockTime(100);
    expect(answerB2, 'b2 waits on its model call').toBeDefined();
    // Partition 0's next write is refused: the transaction fails under it and is aborted. It held
    // partition 0's work only (b2 has written nothing yet).
    driver.refuseWrite();
    input.pipeInput('a', { id: 'a1' }, { partition: 0 });
    await driver.advanceWallClockTime(1_000);
    expect(driver.metrics()).toMatchObject({ partitionResets: 1, partitionsReset: 1, partitionsOwnedAtResets: 2 });
    // Partition 0 was assigned again (its state restored), partition 1 was not.
    expect(assigned).toEqual([0, 1, 0]);
    answerB2!();
    await driver.advanceWallClockTime(6_000);
    expect(
      out
        .readValuesToList()
        .map((o) => o.id)
        .sort(),
    ).toEqual(['a1', 'b2']);
    // a1 ran again after the reset; b2 ran once, its model call answered across the reset.
    expect([...applied].sort()).toEqual(['a1', 'a1', 'b1', 'b2']);
    expect(outcomesAt(driver, 1, 1)).toEqual(['APPLIED']);
    expect(
      driver
        .effects()
        .map((e) => e.effectId)
        .sort(),
    ).toEqual(['events/0/0', 'events/1/0', 'events/1/1']);
    expect(driver.metrics().doubleEffects).toBe(0);
    expect(driver.committed().map((c) => c.offset)).toEqual([1, 2]);
  });

  it('shows outputs only once their transaction is committed', async () => {
    driver = new TopologyTestDriver(decisionTopology(refund), { mode: 'exactlyOnce', commit: { everyMs: 5_000 } });
    const input = driver.createInputTopic<Ev>('events');
    const out = driver.createOutputTopic<Out>('out');
    input.pipeInput('a', { id: 'a1' });
    await driver.advanceWallClockTime(1_000);
    expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED']);
    expect(out.readValuesToList()).toEqual([]);
    await driver.advanceWallClockTime(5_000);
    expect(out.readValuesToList().map((o) => o.id)).toEqual(['a1']);
  });
});

it('refuses a mode it does not know, naming the modes', () => {
  expect(() => new TopologyTestDriver(decisionTopology(refund), { mode: 'eos' as DriverMode })).toThrow(
    /mode must be one of plain, staged, exactlyOnce, got "eos"/,
  );
});
