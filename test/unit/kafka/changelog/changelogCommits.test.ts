import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Engine } from '../../../../src/engine/engine.js';
import { topologyStores } from '../../../../src/graph/stores.js';
import { ChangelogStore } from '../../../../src/kafka/changelog/changelogStore.js';
import type { CommitOffset, Log, LogListener, LogRecord, OutRecord } from '../../../../src/ports/log.js';
import { openMemoryStore } from '../../../../src/state/levelStore.js';
import { stateKeys } from '../../../../src/state/stateKeys.js';
import { SeededRandom } from '../../../../testkit/seededRandom.js';
import { VirtualClock } from '../../../../testkit/virtualClock.js';
import { decisionTopology } from '../../../driver/helpers.js';

// §5, at-least-once: no commit passes a record whose changelog writes are not acknowledged. The
// real engine over a ChangelogStore whose acknowledgements the test holds back.

const tp = { topic: 'events', partition: 0 };

/** One partition, owned from the start; commits and outputs recorded as they come. */
class OnePartitionLog implements Log {
  readonly commits: CommitOffset[] = [];
  readonly outputs: OutRecord[] = [];
  private listener!: LogListener;

  async subscribe(_topics: readonly string[], listener: LogListener): Promise<void> {
    this.listener = listener;
    await listener.assigned([tp]);
  }
  deliver(values: readonly string[]): void {
    const records: LogRecord[] = values.map((v, offset) => ({
      ...tp,
      offset,
      key: `k${offset}`,
      value: new TextEncoder().encode(JSON.stringify({ id: v })),
      timestampMs: 0,
      headers: {},
    }));
    this.listener.records(records);
  }
  pause(): void {}
  resume(): void {}
  async commit(offsets: readonly CommitOffset[]): Promise<void> {
    this.commits.push(...offsets);
  }
  async produce(records: readonly OutRecord[]): Promise<void> {
    this.outputs.push(...records);
  }
  highWatermark(): undefined {
    return undefined;
  }
  async close(): Promise<void> {}
}

/** A changelog producer whose acknowledgements wait for the test. */
class HeldAcks {
  readonly pending: Array<{ records: readonly OutRecord[]; ack: () => void; fail: (e: Error) => void }> = [];
  produce = (records: readonly OutRecord[]): Promise<void> => new Promise((ack, fail) => this.pending.push({ records, ack, fail }));
  ackAll(): void {
    for (const p of this.pending.splice(0)) p.ack();
  }
  failAll(): void {
    for (const p of this.pending.splice(0)) p.fail(new Error('not acknowledged: broker down'));
  }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

async function setUp() {
  const topology = decisionTopology(() => ({ action: 'refund' }), { maxInFlight: 3 });
  const log = new OnePartitionLog();
  const acks = new HeldAcks();
  const local = await openMemoryStore();
  const store = new ChangelogStore({
    local,
    group: 'g',
    stores: topologyStores(topology.nodes),
    produce: acks.produce,
    source: { ends: async () => ({ low: 0, end: 0 }), read: async () => 0, close: async () => {} },
    logger: pino({ level: 'silent' }),
  });
  const fatal: Error[] = [];
  const engine = new Engine({
    topology,
    log,
    store,
    clock: new VirtualClock().view('engine'),
    random: new SeededRandom(1),
    commit: 'each',
    observer: { fatal: (e) => fatal.push(e) },
  });
  await engine.start();
  return { log, acks, local, fatal };
}

describe('commits wait for the changelog', () => {
  it('commits nothing, and sends no output, while the changelog writes of the effects are unacknowledged', async () => {
    const { log, acks, local, fatal } = await setUp();
    log.deliver(['a', 'b', 'c']);
    await settle();
    // The first batch is in LevelDB and its changelog records are sent, not acknowledged (the
    // others wait behind it, as a group commit waits for the one before it).
    expect((await local.entries(stateKeys.ringPrefix('fx'))).length).toBeGreaterThan(0);
    expect(acks.pending.flatMap((p) => p.records.map((r) => r.topic))).toContain('g-fx-changelog');
    expect(log.commits).toEqual([]);
    expect(log.outputs).toEqual([]);
    for (let round = 0; round < 5 && log.outputs.length < 3; round++) {
      acks.ackAll();
      await settle();
    }
    expect(log.outputs.map((o) => o.topic)).toEqual(['out', 'out', 'out']);
    expect(log.commits.at(-1)).toEqual({ ...tp, offset: 3 });
    expect(fatal).toEqual([]);
  });

  it('never commits past a record whose changelog write failed', async () => {
    const { log, acks, fatal } = await setUp();
    log.deliver(['a', 'b', 'c']);
    await settle();
    acks.failAll();
    await settle();
    expect(fatal.map((e) => e.message)).toEqual([expect.stringContaining('was written locally but its changelog write failed: not acknowledged: broker down')]);
    expect(log.commits).toEqual([]);
    expect(log.outputs).toEqual([]);
  });
});
