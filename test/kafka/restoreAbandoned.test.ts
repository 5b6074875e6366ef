// A stop that comes while a partition restores from the broker: the changelog reader ends the read
// at once, even while the batch it polled is still being applied (test/unit/kafka/changelog covers
// what the store then keeps; this is the reader's part, on the real client).
import { afterEach, describe, expect, inject, it } from 'vitest';
import { ChangelogReader } from '../../src/kafka/changelog/changelogReader.js';
import { AckedProducer } from '../../src/kafka/log/ackedProducer.js';
import { createTopic } from './kafkaClient.js';
import { scenario } from './disputes.js';
import { failureLog } from './failureLog.js';

const bootstrap = inject('kafkaBootstrap');
const logger = failureLog();

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
});

describe('a changelog read abandoned by a stop', () => {
  it('rejects at once with the stop as its cause while its batch is still applied, and the reader reads again afterwards', async () => {
    const { group, prefix } = await scenario('restore-abandoned');
    const topic = `${prefix}fx-changelog`;
    await createTopic(bootstrap, topic, 1, 1, { 'cleanup.policy': 'compact' });
    const producer = await AckedProducer.connect({ bootstrap, group }, logger, () => undefined);
    closing.push(() => producer.close(5_000));
    const records = 2_000;
    await producer.produce(Array.from({ length: records }, (_, i) => ({ topic, partition: 0, key: `k${i}`, value: Buffer.from(`v${i}`) })));
    const reader = await ChangelogReader.connect({ bootstrap, group }, logger);
    closing.push(() => reader.close());

    const stop = new AbortController();
    let release!: () => void;
    const stuck = new Promise<void>((resolve) => (release = resolve));
    let applies = 0;
    const read = reader.read(
      [{ topic, partition: 0, from: 0, to: records }],
      async () => {
        // The first batch's local write never ends until the test says so: only the abort can end the read.
        if (++applies === 1) await stuck;
      },
      stop.signal,
    );
    const outcome = read.then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    await expect.poll(() => applies, { timeout: 30_000 }).toBe(1);
    stop.abort(new Error('the engine stops'));
    const error = await outcome;
    expect(error?.message).toBe(`changelog read of ${topic}/0 abandoned`);
    expect((error?.cause as Error).message).toBe('the engine stops');
    expect(applies, 'no batch applied after the abort').toBe(1);
    release();

    // The partition left the reader's assignment: a new read of it runs to its end.
    let again = 0;
    await expect(reader.read([{ topic, partition: 0, from: 0, to: records }], async (messages) => void (again += messages.length))).resolves.toBe(records);
    expect(again).toBe(records);
    // An abort before the read begins: it rejects without reading.
    const aborted = new AbortController();
    aborted.abort(new Error('stopped before'));
    await expect(reader.read([{ topic, partition: 0, from: 0, to: records }], async () => undefined, aborted.signal)).rejects.toThrow('abandoned');
  });
});
