// A changelog write that Kafka refuses for good (its record is larger than the changelog topic's
// max.message.bytes) while a later write of the same changelog partition is on its way. Without
// librdkafka's gap-less guarantee the idempotent producer drops the refused record, starts a new
// sequence and writes the later one: the changelog then holds a later event's state without the
// earlier one's, and a restore from it runs the earlier event again over the later one's state.
// At-least-once, orderly makes that impossible (docs/delivery.md): nothing after a refused record
// reaches the changelog, and the producer stops (fatal), so the worker stops without committing it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { StateStore } from '../../src/graph/stores.js';
import { AckedProducer } from '../../src/kafka/log/ackedProducer.js';
import { ChangelogReader } from '../../src/kafka/changelog/changelogReader.js';
import { changelogTopic } from '../../src/kafka/changelog/changelogWrite.js';
import { ChangelogStore } from '../../src/kafka/changelog/changelogStore.js';
import type { StoreOp } from '../../src/ports/store.js';
import { openLevelStore } from '../../src/state/levelStore.js';
import { stateKeys } from '../../src/state/stateKeys.js';
import { createTopic, readAll } from './kafkaClient.js';
import { changelogWrites } from './robustness.js';
import { scenario } from './disputes.js';
import { failureLog } from './failureLog.js';

const bootstrap = inject('kafkaBootstrap');
const logger = failureLog();
const stores: StateStore[] = [{ name: 'fx', kind: 'effects' }];
/** The changelog topic's limit: the first write's record is above it, every other one far below. */
const MAX_MESSAGE_BYTES = 100_000;

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
});

/** A changelog store over the broker, as a worker runs it at-least-once (the runner's producer settings). */
async function changelogStore(group: string) {
  const dir = await mkdtemp(join(tmpdir(), 'orderly-changelog-gap-'));
  closing.push(() => rm(dir, { recursive: true, force: true }));
  const fatal: Error[] = [];
  const producer = await AckedProducer.connect({ bootstrap, group }, logger, (error) => fatal.push(error));
  closing.push(() => producer.close(5_000));
  const source = await ChangelogReader.connect({ bootstrap, group }, logger);
  const store = new ChangelogStore({ local: await openLevelStore(dir), group, stores, produce: (records) => producer.produce(records), source, logger });
  closing.push(() => store.close());
  return { store, fatal };
}

const tp = { topic: 'in', partition: 0 };
/** One event's state write: its row (of `bytes` characters) and its effect record. */
const write = (n: number, bytes: number): StoreOp[] => [
  { type: 'put', key: stateKeys.table('fx', tp, `row-${n}`), value: { n, blob: 'x'.repeat(bytes) } },
  { type: 'put', key: stateKeys.effect('fx', tp, `e-${n}`), value: { n } },
];

describe('a changelog write refused for good (at-least-once)', () => {
  it('lets no later write of its partition reach the changelog, whether handed over before or after the refusal came', async () => {
    const { group } = await scenario('changelog-gap');
    const topic = changelogTopic(group, 'fx');
    await createTopic(bootstrap, topic, 1, 1, { 'cleanup.policy': 'compact', 'max.message.bytes': String(MAX_MESSAGE_BYTES) });
    const { store, fatal } = await changelogStore(group);

    // Event 1's write goes through: the changelog starts with it.
    await store.batch(write(1, 10));
    // Event 2's row is too large for the topic, though within the producer's own 1 MB limit;
    // event 3's write is handed over while event 2's is in flight, too large to share its batch
    // (batch.size, 1 MB) and far below the topic's limit.
    const refused = store.stage(write(2, 998_000));
    await refused.landed;
    const next = store.stage(write(3, 5_000));
    await next.landed;
    const outcomes = await Promise.allSettled([refused.durable, next.durable]);
    expect(outcomes[0]!.status, 'the refused write fails').toBe('rejected');
    // Event 4's write comes after the refusal is known.
    const after = store.stage(write(4, 10));
    const late = await Promise.allSettled([after.landed.then(() => after.durable)]);

    const records = await readAll(bootstrap, topic);
    const events = records.map((r) => (changelogWrites(r)[0] as { value: { n: number } }).value.n);
    // A prefix of what was staged: event 1, and nothing after the refused event 2.
    expect(events).toEqual([1, 1]);
    expect(outcomes[1]!.status, 'the write handed over behind the refused one is not acknowledged').toBe('rejected');
    expect(late[0]!.status, 'a write staged after the refusal is refused').toBe('rejected');
    expect(String((outcomes[0] as PromiseRejectedResult).reason)).toMatch(/max\.message\.bytes/);
    expect(fatal.length, 'the producer stops: the worker stops with it').toBeGreaterThan(0);
  });
});
