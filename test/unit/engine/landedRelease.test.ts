import { describe, expect, it } from 'vitest';
import { Engine } from '../../../src/engine/engine.js';
import { readOffsetMetadata } from '../../../src/engine/offsetMetadata.js';
import type { DecideFn } from '../../../src/graph/nodes.js';
import type { LogRecord } from '../../../src/ports/log.js';
import type { Store, StoreOp } from '../../../src/ports/store.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { stateKeys } from '../../../src/state/stateKeys.js';
import { SeededRandom } from '../../../testkit/seededRandom.js';
import { VirtualClock } from '../../../testkit/virtualClock.js';
import { decisionTopology, type Ev } from '../../driver/helpers.js';
import { deferred, type Deferred } from '../deferred.js';
import { handDrivenLog } from './handDrivenLog.js';

const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};
const tp = { topic: 'events', partition: 0 };

/**
 * A store that stages its batches as the changelog store does: each lands in memory at once and
 * becomes durable only when the test says so.
 */
async function stagingStore() {
  const inner = await openMemoryStore();
  const batches: Array<{ ops: StoreOp[]; durable: Deferred }> = [];
  const store: Store = {
    location: 'memory (staged)',
    get: (key) => inner.get(key),
    entries: (prefix) => inner.entries(prefix),
    batch: () => Promise.reject(new Error('this test store is only staged')),
    stage: (ops) => {
      // The partition's effect horizon, written when its first event arrives: durable at once, so
      // that the test's batches are the events' own.
      if (ops.every((op) => stateKeys.parse(op.key).kind === 'horizon')) {
        const landed = inner.batch(ops);
        return { landed, durable: landed };
      }
      const durable = deferred();
      batches.push({ ops: [...ops], durable });
      const landed = inner.batch(ops);
      return { landed, durable: landed.then(() => durable.promise) };
    },
    close: () => inner.close(),
  };
  return { store, batches };
}

/** An engine (maxInFlight 1, commit after each finished event) over a log the test drives by hand; `atomic`: an exactly-once log. */
async function setup(options: { atomic?: boolean } = {}) {
  const { store, batches } = await stagingStore();
  const decided: string[] = [];
  const decide: DecideFn<Ev, unknown> = (event) => {
    decided.push(event.id);
    return { action: 'refund' };
  };
  const { log, commits, produced, listener } = handDrivenLog(tp, options);
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
  // Every event has the key `k`: one lane, so the second runs only once the first let it go.
  const record = (offset: number, id: string): LogRecord => ({
    ...tp,
    offset,
    key: 'k',
    value: new TextEncoder().encode(JSON.stringify({ id } satisfies Ev)),
    timestampMs: 0,
    headers: {},
  });
  return { engine, listener: listener(), batches, decided, commits, produced, fatal, record };
}

describe('an event whose state landed but is not durable yet (a store that stages its writes)', () => {
  it('lets its key lane and its slot go on, while nothing is committed or sent before its state is durable', async () => {
    const { engine, listener, batches, decided, commits, produced, record } = await setup();
    listener.records([record(0, 'a'), record(1, 'b')]);
    await flush();
    // a landed (not durable): b, of the same key and with maxInFlight 1, ran and landed too.
    expect(decided).toEqual(['a', 'b']);
    expect(batches).toHaveLength(2);
    expect(engine.inFlight).toBe(0);
    expect(commits).toEqual([]);
    // Outputs go out only once the effect that records them is durable.
    expect(produced).toEqual([]);
    expect(engine.metrics().outcomes.APPLIED ?? 0).toBe(0);

    batches[0]!.durable.resolve();
    await flush();
    expect(produced.map((r) => r.headers?.['orderly-effect-id'])).toEqual(['events/0/0']);
    expect(commits).toEqual([[{ ...tp, offset: 1 }]]);

    batches[1]!.durable.resolve();
    await flush();
    expect(produced.map((r) => r.headers?.['orderly-effect-id'])).toEqual(['events/0/0', 'events/0/1']);
    expect(commits.at(-1)).toEqual([{ ...tp, offset: 2 }]);
    expect(engine.metrics().outcomes.APPLIED).toBe(2);
  });

  it('commits only the durable prefix when a later batch is durable first', async () => {
    const { listener, batches, commits, record } = await setup();
    listener.records([record(0, 'a'), record(1, 'b')]);
    await flush();
    // The store says b is durable before a (the StateWriter still settles a first).
    batches[1]!.durable.resolve();
    await flush();
    expect(commits).toEqual([]);
    batches[0]!.durable.resolve();
    await flush();
    expect(commits.at(-1)).toEqual([{ ...tp, offset: 2 }]);
  });

  it('stops the engine and commits nothing past an event whose state never became durable', async () => {
    const { engine, listener, batches, commits, produced, fatal, record } = await setup();
    listener.records([record(0, 'a'), record(1, 'b')]);
    await flush();
    batches[0]!.durable.reject(new Error('changelog write failed: broker down'));
    batches[1]!.durable.resolve();
    await flush();
    expect(fatal.map((e) => e.message)).toEqual(['changelog write failed: broker down']);
    expect(produced.map((r) => r.headers?.['orderly-effect-id'])).not.toContain('events/0/0');
    // Nothing passes offset 0; its metadata lists 1 (durable) as finished, never 0.
    expect(commits.flat().map((c) => [c.offset, readOffsetMetadata(c.offset, c.metadata).ranges])).toEqual([[0, [{ start: 1, end: 2 }]]]);
    expect(engine.metrics().outcomes.APPLIED ?? 0).toBe(1);
  });

  it('a revocation waits for the state in flight to become durable, then commits it', async () => {
    const { listener, batches, commits, record } = await setup();
    listener.records([record(0, 'a')]);
    await flush();
    let revoked = false;
    const revoking = listener.revoked([tp]).then(() => (revoked = true));
    await flush();
    expect(revoked).toBe(false);
    expect(commits).toEqual([]);
    batches[0]!.durable.resolve();
    await revoking;
    expect(commits).toEqual([[{ ...tp, offset: 1 }]]);
  });

  it('on an exactly-once log, keeps the lane until the event is durable, as before (a commit never splits a unit)', async () => {
    const { listener, batches, decided, commits, record } = await setup({ atomic: true });
    listener.records([record(0, 'a'), record(1, 'b')]);
    await flush();
    expect(decided).toEqual(['a']);
    batches[0]!.durable.resolve();
    await flush();
    expect(decided).toEqual(['a', 'b']);
    expect(commits.at(-1)).toEqual([{ ...tp, offset: 1 }]);
  });
});
