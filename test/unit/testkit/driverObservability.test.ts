// What the driver and the fake model let a property writer observe: which engine instance made a
// model call and how it ended, an aborted call ending at once, cancellable crash timers and the
// restart state, a PARKED reported again told apart from a new parking, the effect's state rows,
// the commit timeline.
import { z } from 'zod';
import { describe, expect, test } from 'vitest';
import { effect, stream, type DecideFn, type Decided } from '../../../src/index.js';
import { fakeModel, TopologyTestDriver } from '../../../testkit/index.js';
import { DriverObservations } from '../../../testkit/driverObservations.js';
import { stateKeys } from '../../../src/state/stateKeys.js';

interface Job {
  readonly n: number;
  readonly bad?: boolean;
}
const Answer = z.object({ n: z.number() });
const noted = effect('noted', ({ event }: Decided<Job, { n: number }>, { state }) => {
  state.put(`job-${event.n}`, { n: event.n });
  return event;
});
const build = (decide: DecideFn<Job, unknown>) =>
  stream<Job>('jobs').keyedSerial({ maxInFlight: 2 }).agentStep('step', decide, { schema: Answer }).park({ attempts: 1 }).applyOnce(noted).to('out').build();

const model = () => fakeModel<Job, unknown>({ latencyMs: 1_000, decide: (e) => ({ n: e.n }), poison: (e) => e.bad === true });

describe('model calls', () => {
  test('each call carries its engine instance, key, partition, end and result', async () => {
    const m = model();
    const driver = new TopologyTestDriver(build(m.decide), { partitions: 2 });
    driver.createInputTopic<Job>('jobs').pipeInput('a', { n: 1 }, { partition: 1 });
    driver.crash({ at: 500 });
    await driver.runUntilIdle();
    driver.restart({ after: 100 });
    await driver.runUntilIdle();
    const calls = m.stats().calls.map(({ instance, key, partition, atMs, endMs, result }) => ({ instance, key, partition, atMs, endMs, result }));
    // Engine 1's call never ended: its engine crashed under it (its timers with it).
    expect(calls).toEqual([
      { instance: 'engine-1', key: 'a', partition: 1, atMs: 0, endMs: undefined, result: undefined },
      { instance: 'engine-2', key: 'a', partition: 1, atMs: 600, endMs: 1_600, result: 'answered' },
    ]);
    expect(driver.modelCalls().map((c) => [c.instance, c.step])).toEqual([
      [1, 'step'],
      [2, 'step'],
    ]);
    await driver.close();
  });

  test('a call whose signal is aborted (its partition revoked) ends at once', async () => {
    const m = model();
    const driver = new TopologyTestDriver(build(m.decide));
    driver.createInputTopic<Job>('jobs').pipeInput('a', { n: 1 });
    await driver.advanceWallClockTime(300);
    await driver.revoke([0]);
    expect(m.stats().calls.map((c) => [c.result, c.endMs])).toEqual([['aborted', 300]]);
    await driver.assign([0]);
    await driver.runUntilIdle();
    expect(driver.effects().map((e) => e.offset)).toEqual([0]);
    await driver.close();
  });
});

describe('crashes and restarts', () => {
  test('a crash set for a time can be cancelled; restartState tells where the driver stands', async () => {
    const driver = new TopologyTestDriver(build(model().decide));
    driver.createInputTopic<Job>('jobs').pipeInput('a', { n: 1 });
    const pending = driver.crash({ at: 500 });
    await driver.advanceWallClockTime(100);
    expect(driver.restartState()).toEqual({ generation: 1, running: true, restartPending: false, crashesPending: 1 });
    pending.cancel();
    expect(driver.restartState().crashesPending).toBe(0);
    await driver.runUntilIdle();
    expect(driver.running).toBe(true);
    expect(driver.assigned()).toEqual([0]);
    driver.crash();
    driver.restart({ after: 1_000 });
    expect(driver.restartState()).toEqual({ generation: 1, running: false, restartPending: true, crashesPending: 0 });
    expect(driver.assigned()).toEqual([]);
    await driver.runUntilIdle();
    expect(driver.restartState()).toEqual({ generation: 2, running: true, restartPending: false, crashesPending: 0 });
    await driver.close();
  });

  test('a PARKED reported again after a redelivery carries again: true; the first parking does not', async () => {
    const driver = new TopologyTestDriver(build(model().decide), { commit: { everyMs: 60_000 } });
    driver.createInputTopic<Job>('jobs').pipeInput('a', { n: 1, bad: true });
    // Parked at 1,000 ms (one attempt), crashed before the commit: the restart redelivers it.
    await driver.advanceWallClockTime(1_500);
    expect(driver.committed()[0]!.offset).toBe(0);
    driver.crash();
    driver.restart();
    await driver.runUntilIdle();
    const parked = driver.history().filter((h) => h.outcome === 'PARKED');
    expect(parked.map((h) => [h.instance, h.again ?? false])).toEqual([
      [1, false],
      [2, true],
    ]);
    await driver.close();
  });
});

describe('parked keys while the engine is crashed', () => {
  test('parked() and parkedHead() read the durable state; resolve() waits for the restarted engine', async () => {
    const driver = new TopologyTestDriver(build(model().decide));
    const input = driver.createInputTopic<Job>('jobs');
    input.pipeInput('a', { n: 1, bad: true });
    input.pipeInput('a', { n: 2 });
    await driver.runUntilIdle();
    const [live] = driver.parked();
    driver.crash();
    expect(driver.parked()).toEqual([live]);
    expect(driver.parkedHead(0, live!.lane).event.offset).toBe(0);
    driver.restart({ after: 2_000 });
    await driver.resolve(0, live!.lane, { decision: { n: 10 } });
    expect(driver.restartState()).toMatchObject({ generation: 2, running: true });
    await driver.runUntilIdle();
    expect(driver.effects().map((e) => [e.offset, e.instance])).toEqual([
      [0, 2],
      [1, 2],
    ]);
    expect(driver.parked()).toEqual([]);
    await driver.close();
  });

  test('resolve() while crashed with no restart asked for says so', async () => {
    const driver = new TopologyTestDriver(build(model().decide));
    driver.createInputTopic<Job>('jobs').pipeInput('a', { n: 1, bad: true });
    await driver.runUntilIdle();
    driver.crash();
    await expect(driver.resolve(0, driver.parked()[0]!.lane, { discard: true })).rejects.toThrow('the engine is crashed; restart() it first');
    await driver.close();
  });
});

describe('effects and commits', () => {
  test('each effect carries the state rows it left; the commit timeline says what was asked, from where, by whom', async () => {
    const driver = new TopologyTestDriver(build(model().decide), { commit: 'each' });
    const input = driver.createInputTopic<Job>('jobs');
    input.pipeInput('a', { n: 1 });
    input.pipeInput('b', { n: 2 });
    await driver.runUntilIdle();
    expect(driver.effects().map((e) => [e.offset, e.state])).toEqual([
      [0, [{ row: 'job-1', value: { n: 1 } }]],
      [1, [{ row: 'job-2', value: { n: 2 } }]],
    ]);
    const commits = driver.commits().map(({ partition, asked, from, offset, instance, accepted }) => ({ partition, asked, from, offset, instance, accepted }));
    expect(commits.at(-1)).toEqual({ partition: 0, asked: 2, from: commits.at(-1)!.from, offset: 2, instance: 1, accepted: true });
    for (let i = 1; i < commits.length; i++) expect(commits[i]!.from).toBe(commits[i - 1]!.offset);
    await driver.close();
  });
});

describe('copies of an event (a declared effect id written twice)', () => {
  const topology = stream<Job>('jobs', { effectId: ({ value }) => `job-${value.n}` })
    .keyedSerial({ maxInFlight: 2 })
    .agentStep('step', (e: Job) => ({ n: e.n }), { schema: Answer })
    .park({ attempts: 1 })
    .applyOnce(noted)
    .to('out')
    .build();
  const record = (offset: number, id: string) => ({
    type: 'put' as const,
    key: stateKeys.effect('noted', { topic: 'jobs', partition: 0 }, id),
    value: { effectId: id, topic: 'jobs', partition: 0, offset, key: 'k', appliedAtMs: 0, outputs: [] },
  });
  /** Offsets 0 and 1 are job-1 (1 the copy), offset 2 is job-2; one key. */
  const observing = () => {
    const observations = new DriverObservations(topology, (_partition, offset) => (offset < 2 ? 'job-1' : 'job-2'));
    for (const offset of [0, 1, 2]) observations.delivered({ topic: 'jobs', partition: 0, offset, key: 'k' }, 0);
    return observations;
  };

  test("a copy has ended by its twin's effect: the next event's effect is no order breach, before the copy's DUPLICATE is reported", () => {
    const observations = observing();
    observations.written([record(0, 'job-1')], 1, 0);
    observations.written([record(2, 'job-2')], 1, 0);
    expect(observations.metrics().orderViolations).toBe(0);
  });

  test('a copy recorded while its twin had neither effect nor end is an order breach', () => {
    const observations = observing();
    observations.written([record(1, 'job-1')], 1, 0);
    expect(observations.metrics().orderViolations).toBe(1);
  });
});
