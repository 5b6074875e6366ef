import { afterEach, describe, expect, it } from 'vitest';
import type { DecideContext, DecideFn } from '../../src/graph/nodes.js';
import { sleep } from '../../src/ports/clock.js';
import { TopologyTestDriver, type DriverMode } from '../../testkit/driver.js';
import { decisionTopology, outcomesAt, parkedValue, readParked, type Ev, type Out } from './helpers.js';

interface Call {
  readonly id: string;
  readonly atMs: number;
  readonly attempt: number;
  readonly previousErrors: readonly string[];
}

/**
 * A model that takes 100 ms and answers a decision that fails the schema for the ids in `bad`
 * (or throws, for the ids in `throwing`). Both sets can change while the test runs: a fixed model.
 */
function model() {
  const bad = new Set<string>();
  const throwing = new Set<string>();
  const calls: Call[] = [];
  const decide: DecideFn<Ev, unknown> = async (event, ctx: DecideContext) => {
    calls.push({ id: event.id, atMs: ctx.clock.now(), attempt: ctx.attempt, previousErrors: ctx.previousErrors });
    await sleep(ctx.clock, 100);
    if (throwing.has(event.id)) throw new Error(`model exploded on ${event.id}`);
    if (bad.has(event.id)) return { action: 'maybe' };
    return { action: 'refund' };
  };
  return { decide, bad, throwing, calls, callsOf: (id: string) => calls.filter((c) => c.id === id) };
}

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

/**
 * a1 (poison, one attempt) and a2 of one key; the engine crashes once a1's park is written (before
 * its park record is sent), and restarts. Nothing was on the parking topic before the restart.
 */
async function crashWhileParkingA1(mode: DriverMode) {
  const m = model();
  m.bad.add('a1');
  const d = new TopologyTestDriver(decisionTopology(m.decide, { attempts: 1 }), { mode });
  driver = d;
  const input = d.createInputTopic<Ev>('events');
  input.pipeInput('a', { id: 'a1' }, { partition: 0 });
  input.pipeInput('a', { id: 'a2' }, { partition: 0 });
  d.crash({ point: 'parking' });
  await d.runUntilIdle();
  expect(readParked(d)).toEqual([]);
  d.restart();
  await d.runUntilIdle();
  return { m, d };
}

/**
 * Partition 0 gets a1 (poison), b1, a2, b2, a3: offsets 0..4. With attempts 3 and retryDelayMs
 * 1000, a1 is called at 0, 1100 and 2200 and parked at 2300.
 */
async function parkA1(m: ReturnType<typeof model>) {
  m.bad.add('a1');
  const d = new TopologyTestDriver(decisionTopology(m.decide, { maxInFlight: 2, attempts: 3, retryDelayMs: 1_000 }), { commit: 'each' });
  driver = d;
  const input = d.createInputTopic<Ev>('events');
  for (const [key, id] of [
    ['a', 'a1'],
    ['b', 'b1'],
    ['a', 'a2'],
    ['b', 'b2'],
    ['a', 'a3'],
  ] as const)
    input.pipeInput(key, { id }, { partition: 0 });
  await d.runUntilIdle();
  return { d, input, out: d.createOutputTopic<Out>('out') };
}

describe('a decision that fails its schema', () => {
  it('is retried after retryDelayMs, then parked after `attempts`, with its errors on the parking topic', async () => {
    const m = model();
    const { d } = await parkA1(m);

    expect(m.callsOf('a1').map((c) => [c.atMs, c.attempt])).toEqual([
      [0, 1],
      [1_100, 2],
      [2_200, 3],
    ]);
    expect(m.callsOf('a1').map((c) => c.previousErrors.length)).toEqual([0, 1, 2]);
    expect(m.callsOf('a1')[1]!.previousErrors[0]).toContain("agentStep 'decide': decision failed its schema: action:");

    const a1 = d.history().filter((h) => h.offset === 0);
    expect(a1.map((h) => [h.outcome, h.atMs, h.attempt])).toEqual([
      ['RETRY', 100, 1],
      ['RETRY', 1_200, 2],
      ['PARKED', 2_300, 3],
    ]);
    expect(a1.at(-1)!.error).toContain('decision failed its schema');

    const parked = readParked(d);
    const poison = parked.find((p) => p.body.reason === 'POISON')!;
    expect(poison.key).toBe('a');
    expect(poison.headers).toMatchObject({ 'orderly-park-reason': 'POISON', 'orderly-effect-id': 'events/0/0' });
    expect(poison.body).toMatchObject({ effectId: 'events/0/0', step: 'decide', attempts: 3, source: { topic: 'events', partition: 0, offset: 0 } });
    expect(parkedValue(poison.body)).toEqual({ id: 'a1' });
    expect(poison.body.errors.map((e) => [e.attempt, e.atMs])).toEqual([
      [1, 100],
      [2, 1_200],
      [3, 2_300],
    ]);
    for (const e of poison.body.errors) expect(e.error).toMatch(/^agentStep 'decide': decision failed its schema: action: /);
  });

  it('holds the later events of its key on the parking topic while other keys go on and are applied', async () => {
    const m = model();
    const { d, out } = await parkA1(m);

    expect(outcomesAt(d, 0, 1)).toEqual(['APPLIED']); // b1
    expect(outcomesAt(d, 0, 2)).toEqual(['HELD']); // a2
    expect(outcomesAt(d, 0, 3)).toEqual(['APPLIED']); // b2
    expect(outcomesAt(d, 0, 4)).toEqual(['HELD']); // a3
    expect(m.callsOf('a2')).toEqual([]);
    expect(m.callsOf('a3')).toEqual([]);
    // b's events ran while a1 waited for its retries.
    expect(d.history().find((h) => h.offset === 3)!.atMs).toBe(200);

    const parked = readParked(d);
    expect(parked.map((p) => [p.body.reason, parkedValue(p.body).id, p.headers['orderly-park-reason']])).toEqual([
      ['POISON', 'a1', 'POISON'],
      ['HELD', 'a2', 'HELD'],
      ['HELD', 'a3', 'HELD'],
    ]);
    expect(parked[1]!.body).toMatchObject({ attempts: 0, errors: [], step: 'decide', key: 'a' });
    expect(out.readValuesToList()).toEqual([
      { id: 'b1', action: 'refund' },
      { id: 'b2', action: 'refund' },
    ]);
    expect(d.parked()).toEqual([
      expect.objectContaining({ topic: 'events', partition: 0, key: 'a', status: 'parked', headSeq: 0, nextSeq: 3, parkedAtMs: 2_300 }),
    ]);
    // The event a resolution would decide: the poison one, with its three errors.
    const head = d.parkedHead(0, 'a');
    expect(head).toMatchObject({ reason: 'POISON', attempts: 3, event: { effectId: 'events/0/0', offset: 0, key: 'a' } });
    expect(head.errors.map((e) => e.attempt)).toEqual([1, 2, 3]);
    // Parked and held events are finished: the commit passes them.
    expect(d.committed()).toEqual([{ topic: 'events', partition: 0, offset: 5 }]);
  });

  it('counts a thrown error as a failed attempt, the same as an invalid decision', async () => {
    const m = model();
    m.throwing.add('t1');
    driver = new TopologyTestDriver(decisionTopology(m.decide, { attempts: 2, retryDelayMs: 500 }));
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('t', { id: 't1' }, { partition: 0 });
    input.pipeInput('t', { id: 't2' }, { partition: 0 });
    input.pipeInput('u', { id: 'u1' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(m.callsOf('t1').map((c) => [c.atMs, c.attempt])).toEqual([
      [0, 1],
      [600, 2],
    ]);
    const t1 = driver.history().filter((h) => h.offset === 0);
    expect(t1.map((h) => h.outcome)).toEqual(['RETRY', 'PARKED']);
    expect(t1[0]!.error).toBe("agentStep 'decide' threw: model exploded on t1");
    expect(outcomesAt(driver, 0, 1)).toEqual(['HELD']);
    expect(outcomesAt(driver, 0, 2)).toEqual(['APPLIED']);
    const poison = readParked(driver).find((p) => p.body.reason === 'POISON')!;
    expect(poison.body.errors.map((e) => e.error)).toEqual([
      "agentStep 'decide' threw: model exploded on t1",
      "agentStep 'decide' threw: model exploded on t1",
    ]);
  });
});

describe('resolve', () => {
  it('{ decision } applies the given decision, replays the held events in order, then releases the key', async () => {
    const m = model();
    const { d, input, out } = await parkA1(m);
    out.readRecordsToList();

    await d.resolve(0, 'a', { decision: { action: 'reject' } });
    await d.runUntilIdle();

    expect(out.readValuesToList()).toEqual([
      { id: 'a1', action: 'reject' },
      { id: 'a2', action: 'refund' },
      { id: 'a3', action: 'refund' },
    ]);
    expect(m.callsOf('a1')).toHaveLength(3); // the person's decision replaced the step
    expect(m.callsOf('a2')).toHaveLength(1);
    const replayed = d.history().filter((h) => h.replayed);
    expect(replayed.map((h) => [h.offset, h.outcome])).toEqual([
      [0, 'APPLIED'],
      [2, 'APPLIED'],
      [4, 'APPLIED'],
    ]);
    expect(d.parked()).toEqual([]);
    expect(d.metrics().orderViolations).toBe(0);

    // The key is released: a new event of it is applied normally, not held.
    input.pipeInput('a', { id: 'a4' }, { partition: 0 });
    await d.runUntilIdle();
    expect(outcomesAt(d, 0, 5)).toEqual(['APPLIED']);
    expect(d.history().find((h) => h.offset === 5)!.replayed).toBeUndefined();
    expect(out.readValuesToList()).toEqual([{ id: 'a4', action: 'refund' }]);
  });

  it('{ retry: true } calls the step again, with its attempts reset', async () => {
    const m = model();
    const { d, out } = await parkA1(m);
    out.readRecordsToList();
    m.bad.delete('a1'); // the model was fixed

    await d.resolve(0, 'a', { retry: true });
    await d.runUntilIdle();

    const calls = m.callsOf('a1');
    expect(calls).toHaveLength(4);
    expect(calls[3]!.attempt).toBe(1);
    expect(calls[3]!.previousErrors).toEqual([]);
    expect(out.readValuesToList().map((v) => v.id)).toEqual(['a1', 'a2', 'a3']);
    expect(outcomesAt(d, 0, 0)).toEqual(['RETRY', 'RETRY', 'PARKED', 'APPLIED']);
    expect(d.parked()).toEqual([]);
  });

  it('{ retry: true } parks the key again if the step keeps failing, its held events still held', async () => {
    const m = model();
    const { d, out } = await parkA1(m);
    out.readRecordsToList();
    readParked(d);

    await d.resolve(0, 'a', { retry: true });
    await d.runUntilIdle();

    expect(m.callsOf('a1')).toHaveLength(6);
    expect(outcomesAt(d, 0, 0).slice(3)).toEqual(['RETRY', 'RETRY', 'PARKED']);
    expect(
      d
        .history()
        .filter((h) => h.offset === 0)
        .at(-1)!.replayed,
    ).toBe(true);
    expect(out.readValuesToList()).toEqual([]);
    expect(d.parked()).toEqual([expect.objectContaining({ key: 'a', status: 'parked', headSeq: 0, nextSeq: 3 })]);
    const reparked = readParked(d).filter((p) => p.body.reason === 'POISON');
    expect(reparked).toHaveLength(2);
    expect(reparked[1]!.body.errors).toHaveLength(3);

    // It can be resolved again.
    await d.resolve(0, 'a', { decision: { action: 'reject' } });
    await d.runUntilIdle();
    expect(out.readValuesToList().map((v) => v.id)).toEqual(['a1', 'a2', 'a3']);
  });

  it('{ discard: true } drops the poison event (DISCARDED) and replays the rest', async () => {
    const m = model();
    const { d, out } = await parkA1(m);
    out.readRecordsToList();

    await d.resolve(0, 'a', { discard: true });
    await d.runUntilIdle();

    expect(outcomesAt(d, 0, 0)).toEqual(['RETRY', 'RETRY', 'PARKED', 'DISCARDED']);
    expect(d.history().find((h) => h.outcome === 'DISCARDED')!.replayed).toBe(true);
    expect(out.readValuesToList()).toEqual([
      { id: 'a2', action: 'refund' },
      { id: 'a3', action: 'refund' },
    ]);
    expect(m.callsOf('a1')).toHaveLength(3);
    expect(d.effects().map((e) => e.offset)).toEqual([1, 3, 2, 4]);
    expect(d.parked()).toEqual([]);
  });

  it('refuses a decision that fails the schema with a clear error, and the key stays parked', async () => {
    const m = model();
    const { d, out } = await parkA1(m);
    out.readRecordsToList();

    await expect(d.resolve(0, 'a', { decision: { action: 'maybe' } })).rejects.toThrow(
      /^resolve: the decision given was refused: agentStep 'decide': decision failed its schema: action: .*; the key stays parked$/,
    );
    await d.runUntilIdle();
    expect(d.parked()).toEqual([expect.objectContaining({ key: 'a', status: 'parked', headSeq: 0, nextSeq: 3 })]);
    expect(out.readValuesToList()).toEqual([]);
    expect(d.history().filter((h) => h.replayed)).toEqual([]);

    // A new event of the key is still held, and a valid decision then goes through.
    const input = d.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a4' }, { partition: 0 });
    await d.runUntilIdle();
    expect(outcomesAt(d, 0, 5)).toEqual(['HELD']);
    await d.resolve(0, 'a', { decision: { action: 'reject' } });
    await d.runUntilIdle();
    expect(out.readValuesToList().map((v) => v.id)).toEqual(['a1', 'a2', 'a3', 'a4']);
  });

  it('refuses to resolve a key that is not parked, or a partition that does not exist', async () => {
    const m = model();
    const { d } = await parkA1(m);
    await expect(d.resolve(0, 'b', { discard: true })).rejects.toThrow("resolve: key 'b' of events/0 is not parked");
    await expect(d.resolve(7, 'a', { discard: true })).rejects.toThrow(
      "TopologyTestDriver.resolve: topic 'events' has partitions 0 to 0; there is no partition 7",
    );
    expect(d.parked()).toHaveLength(1);
  });

  it('refuses to resolve before the engine started, saying so (not that it crashed)', async () => {
    const d = new TopologyTestDriver(decisionTopology(model().decide, { attempts: 1 }));
    driver = d;
    await expect(d.resolve(0, 'a', { discard: true })).rejects.toThrow(
      'TopologyTestDriver.resolve: the engine has not started yet; it starts with the first run (runUntilIdle() or advanceWallClockTime())',
    );
    await expect(d.resolve(0, 'a', {} as never)).rejects.toThrow("resolve key 'a' of partition 0: a resolution must be exactly one of");
  });

  it('refusing a key parked on another partition, names that partition and the call that resolves it', async () => {
    const m = model();
    m.bad.add('r1');
    const d = new TopologyTestDriver(decisionTopology(m.decide, { attempts: 1 }), { partitions: 2 });
    driver = d;
    d.createInputTopic<Ev>('events').pipeInput('R-1', { id: 'r1' }, { partition: 1 });
    await d.runUntilIdle();
    expect(d.parked()).toEqual([expect.objectContaining({ lane: 'R-1', partition: 1 })]);
    await expect(d.resolve(0, 'R-1', { discard: true })).rejects.toThrow(
      "resolve: key 'R-1' of events/0 is not parked; it is parked on events/1: resolve(1, 'R-1', ...)",
    );
    expect(() => d.parkedHead(0, 'R-1')).toThrow("parkedHead: key 'R-1' of events/0 is not parked; it is parked on events/1: parkedHead(1, 'R-1')");
    expect(d.parkedHead(1, 'R-1').event.offset).toBe(0);
    await d.resolve(1, 'R-1', { discard: true });
    await d.runUntilIdle();
    expect(d.parked()).toEqual([]);
  });

  it('refusing a key parked nowhere, says so and lists the parked lanes (a null key by its ~no-key/<offset> lane)', async () => {
    const m = model();
    m.bad.add('n1');
    const d = new TopologyTestDriver(decisionTopology(m.decide, { attempts: 1 }), { partitions: 2 });
    driver = d;
    d.createInputTopic<Ev>('events').pipeInput(null, { id: 'n1' }, { partition: 1 });
    await d.runUntilIdle();
    expect(d.parked()).toEqual([expect.objectContaining({ lane: '~no-key/0', key: null, partition: 1 })]);
    await expect(d.resolve(0, 'R-1', { discard: true })).rejects.toThrow(
      "resolve: key 'R-1' of events/0 is not parked; it is not parked on any partition of events (parked now: '~no-key/0' on events/1); an event with a null key is parked under its lane '~no-key/<offset>', as parked() lists it",
    );
    // The null key's lane resolves it.
    await d.resolve(1, '~no-key/0', { discard: true });
    await d.runUntilIdle();
    expect(d.parked()).toEqual([]);
  });

  it.each([
    [{}, 'got {}'],
    [{ retry: false }, 'got { retry: false }; write { retry: true }'],
    [{ decision: { action: 'reject' }, retry: true }, "got 'decision' and 'retry' together"],
    [{ decision: undefined }, 'got a decision of undefined'],
  ])('refuses a resolution that is not exactly one of decision, retry, discard (%j); the key stays parked', async (resolution, problem) => {
    const m = model();
    const { d, out } = await parkA1(m);
    out.readRecordsToList();
    await expect(d.resolve(0, 'a', resolution as never)).rejects.toThrow(
      `resolve key 'a' of partition 0: a resolution must be exactly one of { decision: ... }, { retry: true } and { discard: true }; ${problem}`,
    );
    await d.runUntilIdle();
    expect(d.parked()).toEqual([expect.objectContaining({ key: 'a', status: 'parked' })]);
    expect(out.readValuesToList()).toEqual([]);
  });

  it('keeps events of the key that arrive during the replay behind it, in order', async () => {
    const m = model();
    const { d, input, out } = await parkA1(m);
    out.readRecordsToList();

    await d.resolve(0, 'a', { decision: { action: 'reject' } });
    await d.advanceWallClockTime(50); // a2's replay is calling the model now
    expect(m.callsOf('a2')).toHaveLength(1);
    input.pipeInput('a', { id: 'a4' }, { partition: 0 });
    input.pipeInput('c', { id: 'c1' }, { partition: 0 });
    input.pipeInput('a', { id: 'a5' }, { partition: 0 });
    await d.runUntilIdle();

    const values = out.readValuesToList();
    expect(values.filter((v) => v.id.startsWith('a')).map((v) => v.id)).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
    expect(values.map((v) => v.id)).toContain('c1');
    expect(outcomesAt(d, 0, 5)).toEqual(['HELD', 'APPLIED']); // a4: held behind the replay, then replayed
    expect(outcomesAt(d, 0, 7)).toEqual(['HELD', 'APPLIED']);
    expect(outcomesAt(d, 0, 6)).toEqual(['APPLIED']); // c1 never waited
    expect(d.parked()).toEqual([]);
    expect(d.metrics().orderViolations).toBe(0);
  });

  it('parks a held event that fails during the replay, keeping the rest behind it', async () => {
    const m = model();
    const { d, out } = await parkA1(m);
    out.readRecordsToList();
    m.bad.add('a2');

    await d.resolve(0, 'a', { decision: { action: 'reject' } });
    await d.runUntilIdle();

    expect(out.readValuesToList().map((v) => v.id)).toEqual(['a1']);
    expect(outcomesAt(d, 0, 2)).toEqual(['HELD', 'RETRY', 'RETRY', 'PARKED']);
    expect(d.parked()).toEqual([expect.objectContaining({ key: 'a', status: 'parked', headSeq: 1, nextSeq: 3 })]);
    const last = readParked(d).at(-1)!;
    expect(last.body.reason).toBe('POISON');
    expect(parkedValue(last.body).id).toBe('a2');

    await d.resolve(0, 'a', { discard: true });
    await d.runUntilIdle();
    expect(out.readValuesToList().map((v) => v.id)).toEqual(['a3']);
    expect(d.parked()).toEqual([]);
  });

  it('{ discard: true } survives a crash before the commit: the redelivered event is DISCARDED, not run again', async () => {
    const m = model();
    m.bad.add('a1');
    const d = new TopologyTestDriver(decisionTopology(m.decide, { attempts: 1 })); // commits every 5000 ms
    driver = d;
    const input = d.createInputTopic<Ev>('events');
    for (const id of ['a0', 'a1', 'a2']) input.pipeInput('a', { id }, { partition: 0 });
    await d.advanceWallClockTime(1_000);
    expect(d.parked()).toHaveLength(1);
    m.bad.delete('a1'); // the model would now accept it: a run after the discard would apply it
    await d.resolve(0, 'a', { discard: true });
    await d.advanceWallClockTime(1_000);
    expect(d.committed()[0]!.offset).toBe(0);
    d.crash();
    d.restart();
    await d.runUntilIdle();

    const second = d.history().filter((h) => h.instance === 2);
    expect(second.map((h) => [h.offset, h.outcome])).toEqual([
      [0, 'DUPLICATE'],
      [1, 'DISCARDED'],
      [2, 'DUPLICATE'],
    ]);
    expect(d.effects().map((e) => e.offset)).toEqual([0, 2]);
    expect(m.callsOf('a1')).toHaveLength(1);
    expect(d.metrics().orderViolations).toBe(0);
  });

  it('refuses a second resolution while the key is being replayed', async () => {
    const m = model();
    const { d } = await parkA1(m);
    await d.resolve(0, 'a', { decision: { action: 'reject' } });
    await d.advanceWallClockTime(50); // a2's replay is calling the model
    await expect(d.resolve(0, 'a', { discard: true })).rejects.toThrow("key 'a' of events/0 is already being replayed");
    await d.runUntilIdle();
    expect(d.parked()).toEqual([]);
    expect(d.history().filter((h) => h.outcome === 'DISCARDED')).toEqual([]);
  });

  it('resolves a parked event that has no key through its lane', async () => {
    const m = model();
    m.bad.add('n1');
    driver = new TopologyTestDriver(decisionTopology(m.decide, { attempts: 1 }));
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput(null, { id: 'n1' }, { partition: 0 });
    input.pipeInput(null, { id: 'n2' }, { partition: 0 });
    await driver.runUntilIdle();
    // Events without a key hold nothing behind them: each is a lane of its own.
    expect(outcomesAt(driver, 0, 1)).toEqual(['APPLIED']);
    const [parked] = driver.parked();
    expect(parked).toMatchObject({ key: null, status: 'parked' });
    await driver.resolve(0, parked!.lane, { decision: { action: 'reject' } });
    await driver.runUntilIdle();
    expect(driver.parked()).toEqual([]);
    expect(
      driver
        .createOutputTopic<Out>('out')
        .readValuesToList()
        .map((v) => v.id),
    ).toEqual(['n2', 'n1']);
  });
});

describe('parking across crashes', () => {
  it('keeps the failed attempts of an event across a crash: it is not given its attempts anew', async () => {
    const m = model();
    m.bad.add('a1');
    const d = new TopologyTestDriver(decisionTopology(m.decide, { attempts: 3, retryDelayMs: 1_000 }));
    driver = d;
    d.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' }, { partition: 0 });
    d.crash({ at: 1_150 }); // while attempt 2 (called at 1100) is in flight
    d.restart({ after: 2_000 }); // at 2000
    await d.runUntilIdle();

    expect(m.callsOf('a1').map((c) => [c.atMs, c.attempt, c.previousErrors.length])).toEqual([
      [0, 1, 0],
      [1_100, 2, 1], // its failure never landed: the crash came first
      [2_000, 2, 1], // the first failure did land: the restarted engine goes on from it
      [3_100, 3, 2],
    ]);
    expect(outcomesAt(d, 0, 0)).toEqual(['RETRY', 'RETRY', 'PARKED']);
    expect(
      readParked(d)
        .filter((p) => p.body.reason === 'POISON')
        .map((p) => p.body.attempts),
    ).toEqual([3]);
  });

  it.each(['replaying', 'recorded-not-committed'] as const)(
    'finishes a replay that a crash (%s) interrupted, after the restart: every output sent, every effect once, in order',
    async (point) => {
      const m = model();
      const { d, out } = await parkA1(m);
      out.readRecordsToList();
      d.crash({ point }); // 'replaying': a1's replay is done; 'recorded-not-committed': a1's effect is recorded, its output not sent
      await d.resolve(0, 'a', { decision: { action: 'reject' } });
      await d.runUntilIdle();
      expect(d.running).toBe(false);
      d.restart();
      await d.runUntilIdle();

      // a1's offset was committed when it was parked: only its held copy can bring its output back.
      const ids = out.readValuesToList().map((v) => v.id);
      expect([...new Set(ids)]).toEqual(['a1', 'a2', 'a3']);
      expect(d.parked()).toEqual([]);
      expect(d.metrics().doubleEffects).toBe(0);
      expect(d.metrics().orderViolations).toBe(0);
      expect(
        d
          .effects()
          .filter((e) => e.key === 'a')
          .map((e) => e.offset),
      ).toEqual([0, 2, 4]);
      expect(d.effects().find((e) => e.offset === 0)!.instance).toBe(1);
    },
  );

  it('after a crash between parking and sending the park record, parks the event once and sends its record', async () => {
    const { m, d } = await crashWhileParkingA1('plain');
    const parked = readParked(d);
    expect(parked.map((p) => [p.body.reason, parkedValue(p.body).id])).toEqual([
      ['POISON', 'a1'],
      ['HELD', 'a2'],
    ]);
    expect(m.callsOf('a1')).toHaveLength(1); // the park was recorded: no new attempt
    expect(d.parked()).toEqual([expect.objectContaining({ key: 'a', headSeq: 0, nextSeq: 2 })]);
  });

  it('sends the park record of an event parked again during its replay, even if the engine crashes as it parks it', async () => {
    const m = model();
    const { d } = await parkA1(m);
    const before = readParked(d);
    d.crash({ point: 'parking' }); // the retry fails again: crash once its park is written
    await d.resolve(0, 'a', { retry: true });
    await d.runUntilIdle();
    d.restart();
    await d.runUntilIdle();

    const after = readParked(d).slice(before.length);
    expect(after.map((p) => [p.body.reason, parkedValue(p.body).id, p.body.attempts])).toEqual([['POISON', 'a1', 3]]);
    expect(after[0]!.body.parkedAtMs).toBeGreaterThan(before[0]!.body.parkedAtMs);
    expect(d.parked()).toEqual([expect.objectContaining({ key: 'a', status: 'parked', parkedAtMs: after[0]!.body.parkedAtMs })]);
  });
});

describe('the parking topic under exactly-once (a transactional log)', () => {
  /**
   * Partition 0 gets x1 (60 s at the model), then a1 (poison, one attempt) and a2 (held behind it):
   * a1 and a2 are parked and their park records committed while x1 keeps every offset from being
   * committed. A crash at 5 s, then a restart, delivers all three again. Without commit metadata
   * (`commitMetadataMaxBytes` 0) the restart runs a1 and a2 again; with it (the default), the commit
   * lists them as finished and the restart skips them.
   */
  async function parkThenRedeliver(mode: DriverMode, commitMetadataMaxBytes = 0) {
    const m = model();
    m.bad.add('a1');
    const slow: DecideFn<Ev, unknown> = async (event, ctx) => {
      if (event.id === 'x1') await sleep(ctx.clock, 60_000, ctx.signal);
      return m.decide(event, ctx);
    };
    const d = new TopologyTestDriver(decisionTopology(slow, { maxInFlight: 2, attempts: 1 }), { commit: 'each', mode, commitMetadataMaxBytes });
    driver = d;
    const input = d.createInputTopic<Ev>('events');
    for (const [key, id] of [
      ['x', 'x1'],
      ['a', 'a1'],
      ['a', 'a2'],
    ] as const)
      input.pipeInput(key, { id }, { partition: 0 });
    await d.advanceWallClockTime(5_000);
    const beforeCrash = readParked(d).map((p) => `${p.body.reason} ${parkedValue(p.body).id}`);
    expect(d.committed()[0]!.offset).toBe(0);
    d.crash();
    d.restart();
    await d.runUntilIdle();
    const again = commitMetadataMaxBytes === 0 ? 2 : 1;
    expect(outcomesAt(d, 0, 1)).toEqual(Array<string>(again).fill('PARKED'));
    expect(outcomesAt(d, 0, 2)).toEqual(Array<string>(again).fill('HELD'));
    return { beforeCrash, after: readParked(d).map((p) => `${p.body.reason} ${parkedValue(p.body).id}`) };
  }

  it('at-least-once, for contrast: the redelivered parked and held events send their park records again', async () => {
    const { beforeCrash, after } = await parkThenRedeliver('plain');
    expect(beforeCrash).toEqual(['POISON a1', 'HELD a2']);
    expect(after).toEqual(['POISON a1', 'HELD a2', 'POISON a1', 'HELD a2']);
  });

  it('at-least-once with commit metadata: the commit lists the parked and held events as finished, so the restart skips them and sends no park record again', async () => {
    const { beforeCrash, after } = await parkThenRedeliver('plain', 4095);
    expect(beforeCrash).toEqual(['POISON a1', 'HELD a2']);
    expect(after).toEqual(['POISON a1', 'HELD a2']);
  });

  it('exactly-once: a reader sees each parking once, though the parked and held events come again after a crash', async () => {
    const { beforeCrash, after } = await parkThenRedeliver('exactlyOnce');
    expect(beforeCrash).toEqual(['POISON a1', 'HELD a2']);
    expect(after).toEqual(['POISON a1', 'HELD a2']);
  });

  it('exactly-once: a crash as the event is parked throws the parking away with its transaction; after the restart it is parked once', async () => {
    const { m, d } = await crashWhileParkingA1('exactlyOnce');
    expect(readParked(d).map((p) => [p.body.reason, parkedValue(p.body).id])).toEqual([
      ['POISON', 'a1'],
      ['HELD', 'a2'],
    ]);
    // The aborted parking's attempt was rolled back with it: the restart asked the model again.
    expect(m.callsOf('a1')).toHaveLength(2);
    expect(d.parked()).toEqual([expect.objectContaining({ key: 'a', headSeq: 0, nextSeq: 2 })]);
  });
});

describe('a retry delay across a restart', () => {
  it('an event that crashed while it waited for its retry resumes after what is left of the delay, not at once', async () => {
    const m = model();
    m.throwing.add('a1');
    driver = new TopologyTestDriver(decisionTopology(m.decide, { attempts: 3, retryDelayMs: 1_000 }));
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
    await driver.advanceWallClockTime(400); // a1's first call failed at 100: its retry is due at 1,100
    driver.crash();
    driver.restart();
    await driver.advanceWallClockTime(5_000);
    expect(m.callsOf('a1').map((c) => [c.attempt, c.atMs])).toEqual([
      [1, 0],
      [2, 1_100],
      [3, 2_200],
    ]);
  });
});
