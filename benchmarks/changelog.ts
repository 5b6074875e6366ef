/**
 * The changelog's costs on a real broker: how fast a ChangelogStore writes (LevelDB, then the
 * changelog records, acknowledged) and how fast a partition is restored from its changelog in full.
 * Not part of `npm run bench` (it needs a broker); see docs/state.md for figures.
 *
 *     npm run kafka -- up --port 9092
 *     npx tsx benchmarks/changelog.ts --bootstrap 127.0.0.1:9092 [--ops 50000] [--batch 100]
 */
import rdkafka from '@confluentinc/kafka-javascript';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { AckedProducer } from '../src/kafka/log/ackedProducer.js';
import { ChangelogReader } from '../src/kafka/changelog/changelogReader.js';
import { ChangelogStore, type RestoreReport } from '../src/kafka/changelog/changelogStore.js';
import { ensureTopics } from '../src/kafka/topics.js';
import { openLevelStore } from '../src/state/levelStore.js';
import { stateKeys } from '../src/state/stateKeys.js';

const { values: args } = parseArgs({
  options: { bootstrap: { type: 'string', default: '127.0.0.1:9092' }, ops: { type: 'string', default: '50000' }, batch: { type: 'string', default: '100' } },
});
const ops = Number(args.ops);
const batch = Number(args.batch);
const bootstrap = args.bootstrap!;
const logger = pino({ level: 'warn' });
const settings = { bootstrap, group: `changelog-bench-${Date.now()}` };
const source = `${settings.group}-in`;
const stores = [{ name: 'fx', kind: 'effects' as const }];
const tp = { topic: source, partition: 0 };
// An effect record of the disputes example's size (one stored output).
const record = {
  effectId: `${source}/0/1`,
  topic: source,
  partition: 0,
  offset: 1,
  key: 'acct-01',
  appliedAtMs: 1,
  outputs: [
    {
      topic: 'out',
      key: 'acct-01',
      valueBase64: Buffer.from('{"disputeId":"d-0001","action":"refund","rationale":"not received"}').toString('base64'),
      headers: {},
    },
  ],
};

async function createSource(): Promise<void> {
  const admin = rdkafka.AdminClient.create({ 'bootstrap.servers': bootstrap });
  await new Promise<void>((resolve, reject) =>
    admin.createTopic({ topic: source, num_partitions: 1, replication_factor: -1 }, 30_000, (e) => (e ? reject(e) : resolve())),
  );
  admin.disconnect();
}

async function main(): Promise<void> {
  await createSource();
  await ensureTopics(settings, logger, { source, outputs: [], changelogs: [`${settings.group}-fx-changelog`] });
  const dir = await mkdtemp(join(tmpdir(), 'orderly-changelog-bench-'));
  try {
    const producer = await AckedProducer.connect(settings, logger, (error) => console.error(error));
    const writer = new ChangelogStore({
      local: await openLevelStore(join(dir, 'a')),
      group: settings.group,
      stores,
      produce: (r) => producer.produce(r),
      source: await ChangelogReader.connect(settings, logger),
      logger,
    });
    const started = performance.now();
    for (let i = 0; i < ops; i += batch) {
      await writer.batch(
        Array.from({ length: Math.min(batch, ops - i) }, (_, j) => ({
          type: 'put' as const,
          key: stateKeys.effect('fx', tp, `${source}/0/${i + j}`),
          value: record,
        })),
      );
    }
    const writeMs = performance.now() - started;
    await writer.close();
    await producer.close();
    let restored: RestoreReport | undefined;
    const reader = new ChangelogStore({
      local: await openLevelStore(join(dir, 'b')),
      group: settings.group,
      stores,
      produce: async () => {},
      source: await ChangelogReader.connect(settings, logger),
      logger,
      onRestored: (r) => (restored = r),
    });
    await reader.openPartition(tp);
    await reader.close();
    console.log(
      `write:   ${ops} effect records in batches of ${batch}: ${(writeMs / 1000).toFixed(2)} s, ${Math.round((ops / writeMs) * 1000)} records/s, ${(writeMs / Math.ceil(ops / batch)).toFixed(1)} ms per acknowledged batch`,
    );
    console.log(
      `restore: ${restored!.records} records in full: ${(restored!.tookMs / 1000).toFixed(2)} s, ${Math.round((restored!.records / restored!.tookMs) * 1000)} records/s`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
