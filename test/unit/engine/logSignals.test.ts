import { describe, expect, it } from 'vitest';
import { Engine, type CommitPolicy } from '../../../src/engine/engine.js';
import type { DecideFn } from '../../../src/graph/nodes.js';
import { sleep } from '../../../src/ports/clock.js';
import type { LogRecord } from '../../../src/ports/log.js';
import type { Store } from '../../../src/ports/store.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { SeededRandom } from '../../../testkit/seededRandom.js';
import { VirtualClock } from '../../../testkit/virtualClock.js';
import { decisionTopology, type Ev } from '../../driver/helpers.js';
import { handDrivenLog } from './handDrivenLog.js';

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
const tp = { topic: 'events', partition: 0 };

/** An engine over a log the test drives by hand through the listener it was given. */
async function setup(commit: CommitPolicy = 'each') {
  const clock = new VirtualClock();
  const aborted: string[] = [];
  const decide: DecideFn<Ev, unknown> = async (event, ctx) => {
    try {
      await sleep(ctx.clock, event.ms ?? 100, ctx.signal);
    } catch (error) {
      aborted.push(event.id);
      throw error;
    }
    return { action: 'refund' };
  };
  const { log, commits, listener } = handDrivenLog(tp);
  const fatal: Error[] = [];
  const engine = new Engine({
    topology: decisionTopology(decide),
    log,
    clock: clock.view('engine'),
    store: await openMemoryStore(),
    random: new SeededRandom(1),
    commit,
    observer: { fatal: (error) => fatal.push(error) },
  });
  await engine.start();
  const record = (offset: number, ev: Ev): LogRecord => ({
    ...tp,
    offset,
    key: ev.id,
    value: new TextEncoder().encode(JSON.stringify(ev)),
    timestampMs: 0,
    headers: {},
  });
  return { clock, engine, listener: listener(), aborted, fatal, commits, record };
}

describe('what the log tells the engine', () => {
  it('failed: the engine stops at once, gives up its work in flight and reports the error once', async () => {
    const { engine, listener, aborted, fatal, record } = await setup();
    listener.records([record(0, { id: 'a1', ms: 60_000 })]);
    await flush();
    expect(engine.inFlight).toBe(1);
    listener.failed(new Error('Kafka consumer failed: broker gone'));
    listener.failed(new Error('a second error'));
    await flush();
    expect(fatal.map((e) => e.message)).toEqual(['Kafka consumer failed: broker gone']);
    expect(aborted).toEqual(['a1']);
    expect(engine.inFlight).toBe(0);
  });

  it('lost: the partition is dropped without a commit, its work in flight given up', async () => {
    // Commits every 5 s: when the partition is lost at 1 s, a0 has finished but is not committed.
    const { clock, engine, listener, aborted, commits, record, fatal } = await setup({ everyMs: 5_000 });
    listener.records([record(0, { id: 'a0', ms: 100 }), record(1, { id: 'a1', ms: 60_000 })]);
    await flush();
    while (clock.fireNext(1_000)) await flush();
    expect(engine.metrics().outcomes.APPLIED).toBe(1);
    await listener.lost([tp]);
    expect(aborted).toEqual(['a1']);
    expect(engine.inFlight).toBe(0);
    while (clock.fireNext()) await flush();
    expect(commits).toEqual([]);
    expect(fatal).toEqual([]);
  });

  it('records while the engine stops: ignored, as a fetched batch can still come after the pause; left uncommitted for the next owner', async () => {
    const { clock, engine, listener, record, commits, fatal } = await setup();
    listener.records([record(0, { id: 'a0', ms: 1_000 })]);
    await flush();
    const stopped = engine.stop({ graceMs: 5_000 });
    await flush();
    listener.records([record(1, { id: 'b0', ms: 100 })]);
    while (clock.fireNext()) await flush();
    await stopped;
    expect(engine.metrics().outcomes.APPLIED).toBe(1);
    expect(commits.flat().map((c) => c.offset)).toEqual([1]);
    expect(fatal).toEqual([]);
  });
});

/**
 * An engine over `store` whose restore waits for the test: it is started, stopped while the gate
 * is shut, then the gate opens. Returns the engine and the fatal errors it reported.
 */
async function stopWhileRestoring(store: Store, options = { openGates: true }): Promise<{ engine: Engine; fatal: Error[] }> {
  const { engine, started, stopped, fatal } = await startThenStop(store);
  if (options.openGates) openGates();
  await expect(started).resolves.toBeUndefined();
  await expect(stopped).resolves.toBeUndefined();
  return { engine, fatal };
}

/** Starts an engine over `store` (its one partition assigned at once), then stops it as soon as the start is under way; `seen` hears the log close. */
async function startThenStop(store: Store, seen: string[] = []) {
  const { log } = handDrivenLog(tp);
  log.close = async () => void seen.push('log closed');
  const fatal: Error[] = [];
  const engine = new Engine({
    topology: decisionTopology(async () => ({ action: 'refund' })),
    log,
    clock: new VirtualClock().view('engine'),
    store,
    random: new SeededRandom(1),
    observer: { fatal: (error) => fatal.push(error) },
  });
  const started = engine.start();
  // Settled by the test (a pending start must not reject unhandled before it looks).
  started.catch(() => undefined);
  await flush();
  return { engine, started, stopped: engine.stop(), fatal };
}

let openGates: () => void = () => undefined;

/** A promise that stays pending until {@link stopWhileRestoring} opens it, after its stop. */
function gate(): Promise<void> {
  return new Promise<void>((resolve) => (openGates = resolve));
}

describe('a stop while a partition restores', () => {
  it('closes the restoring partition: the restore ends without running it, and the engine stops cleanly', async () => {
    const shut = gate();
    const memory = await openMemoryStore();
    // A store whose reads wait for the test: the partition stays restoring until the gate opens.
    const store = new Proxy(memory, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (name !== 'entries' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: unknown[]) => {
          await shut;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const { fatal } = await stopWhileRestoring(store);
    expect(fatal).toEqual([]);
  });
});

describe('a stop while the store restores a partition', () => {
  it('does not run the partition once its state is back: no task starts after the stop, and its state is handed back', async () => {
    const shut = gate();
    const memory = await openMemoryStore();
    const closed: string[] = [];
    // A changelog store stand-in: its restore (openPartition) waits for the test.
    const store = new Proxy(memory, {
      get(target, name, receiver) {
        if (name === 'openPartition') return () => shut;
        if (name === 'closePartition') return async (p: { topic: string; partition: number }) => void closed.push(`${p.topic}/${p.partition}`);
        const value = Reflect.get(target, name, receiver) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const { engine, fatal } = await stopWhileRestoring(store);
    expect(engine.status().partitions).toEqual([]);
    expect(closed).toEqual([`${tp.topic}/${tp.partition}`]);
    expect(fatal).toEqual([]);
  });
});

describe('a stop while the store restores a partition, with a store that honours the abort', () => {
  /**
   * A changelog store stand-in whose restore never ends by itself: when its signal aborts, it
   * rejects with `failure(reason)`, a turn of the event loop later (what it keeps lands first).
   */
  async function abortableStore(failure: (reason: unknown) => Error, seen: string[] = []) {
    const memory = await openMemoryStore();
    const closed: string[] = [];
    const reasons: unknown[] = [];
    const store = new Proxy(memory, {
      get(target, name, receiver) {
        if (name === 'openPartition')
          return (_tp: unknown, _committed: unknown, signal?: AbortSignal) =>
            new Promise<void>((_resolve, reject) =>
              signal?.addEventListener('abort', () => {
                reasons.push(signal.reason);
                setImmediate(() => {
                  seen.push('restore ended');
                  reject(failure(signal.reason));
                });
              }),
            );
        if (name === 'closePartition') return async (p: { topic: string; partition: number }) => void closed.push(`${p.topic}/${p.partition}`);
        const value = Reflect.get(target, name, receiver) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return { store, closed, reasons };
  }

  it('does not wait for the restore: the stop aborts it, the partition is neither run nor handed back', async () => {
    const { store, closed, reasons } = await abortableStore((reason) => new Error('restore abandoned', { cause: reason }));
    const { engine, fatal } = await stopWhileRestoring(store, { openGates: false });
    expect(reasons.map((r) => (r as Error).message)).toEqual(['the engine stops']);
    expect(engine.status().partitions).toEqual([]);
    expect(closed, 'a partial restore is not vouched for').toEqual([]);
    expect(fatal).toEqual([]);
  });

  it('lets the aborted restore end before it closes the log', async () => {
    const seen: string[] = [];
    const { store } = await abortableStore((reason) => new Error('restore abandoned', { cause: reason }), seen);
    const { started, stopped } = await startThenStop(store, seen);
    await expect(stopped).resolves.toBeUndefined();
    await expect(started).resolves.toBeUndefined();
    expect(seen).toEqual(['restore ended', 'log closed']);
  });

  it("does not hide a restore's own failure that comes as it stops: it reaches the log that assigned the partition", async () => {
    const { store, closed } = await abortableStore(() => new Error('LevelDB: disk full'));
    const { started, stopped } = await startThenStop(store);
    await expect(started).rejects.toThrow('LevelDB: disk full');
    await expect(stopped).resolves.toBeUndefined();
    expect(closed).toEqual([]);
  });
});
