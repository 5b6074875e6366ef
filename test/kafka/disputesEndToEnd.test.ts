// The disputes example end to end through `./bin/orderly run`, on the real broker.
import { afterEach, describe, expect, inject, it } from 'vitest';
import { createTopic, produce, readAll, readUntil } from './kafkaClient.js';
import { asInput, checkDecisions, decided, dedupe, disputes, scenario } from './disputes.js';
import { changelogWrites } from './robustness.js';
import { Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

describe('orderly run: the disputes example on Kafka', () => {
  it.each([
    { storedFormat: 2, args: ['--stored-format', '2'] },
    { storedFormat: 4, args: [] },
  ])(
    'decides 200 disputes of 20 accounts on 4 partitions, each once and in per-account order (stored format $storedFormat)',
    async ({ storedFormat, args }) => {
      const { prefix, group, stateDir } = await scenario(`e2e-v${storedFormat}`);
      const inputs = disputes(200, 20);
      await createTopic(bootstrap, `${prefix}disputes`, 4);
      // Half before the worker starts, half while it runs.
      await produce(bootstrap, `${prefix}disputes`, inputs.slice(0, 100).map(asInput));
      const worker = new Worker({ bootstrap, group, stateDir, topicPrefix: prefix, args });
      workers.push(worker);
      await worker.waitFor('assignment', (lines) => lines.some((l) => l.msg === 'assigned'));
      await produce(bootstrap, `${prefix}disputes`, inputs.slice(100).map(asInput));

      const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
        timeoutMs: 120_000,
        describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${worker.stuck()}`,
      });
      expect(checkDecisions(inputs, output)).toEqual([]);
      // No crash and no rebalance: not even a repeated output.
      expect(dedupe(output).copies).toBe(0);
      expect(worker.outcomes('APPLIED')).toHaveLength(inputs.length);
      expect(output.every((r) => r.key === JSON.parse(r.value!).account)).toBe(true);

      expect(await worker.stop()).toBe(0);
      const messages = worker.lines.map((l) => l.msg);
      expect(messages).toContain('left the group and closed');
      expect(messages).toContain('worker stopped');

      // Each event's effect record: carried by its row's changelog record (format 4), or a record of its own (format 2).
      const changelog = await readAll(bootstrap, `${group}-dispute-decisions-changelog`);
      const ringRecords = changelog.filter((r) => r.key!.startsWith('ring/')).length;
      const carried = changelog.reduce((n, r) => n + changelogWrites(r).length - 1, 0);
      const formats = new Set(changelog.map((r) => r.headers['orderly-format'] ?? r.value?.slice(0, 3)));
      if (storedFormat === 4) {
        expect([ringRecords, carried], 'ring records of their own, carried').toEqual([0, inputs.length]);
        expect([...formats]).toEqual(['v4:']);
      } else {
        expect([ringRecords, carried], 'ring records of their own, carried').toEqual([inputs.length, 0]);
        expect([...formats]).toEqual(['2']);
      }
    },
  );

  it('keeps its partitions while a model call outlasts max.poll.interval.ms (the poll loop never waits for the model)', async () => {
    const { prefix, group, stateDir } = await scenario('slow');
    const inputs = disputes(3, 3);
    await createTopic(bootstrap, `${prefix}disputes`, 1);
    await produce(bootstrap, `${prefix}disputes`, inputs.map(asInput));
    const worker = new Worker({
      bootstrap,
      group,
      stateDir,
      topicPrefix: prefix,
      // Each call takes 8 s; the consumer must poll at least every 7 s or be thrown out of the group.
      env: { ORDERLY_MODEL_LATENCY_MS: '8000', ORDERLY_MAX_IN_FLIGHT: '1' },
      args: ['--consumer-config', 'max.poll.interval.ms=7000'],
    });
    workers.push(worker);
    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
      timeoutMs: 120_000,
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${worker.stuck()}`,
    });
    expect(checkDecisions(inputs, output)).toEqual([]);
    expect(dedupe(output).copies).toBe(0);
    const messages = worker.lines.map((l) => l.msg);
    expect(messages.filter((m) => m === 'assigned')).toHaveLength(1);
    expect(messages).not.toContain('revoking');
    expect(messages).not.toContain('partitions lost');
    // librdkafka says so (MAXPOLL) when the application did not poll in time; and warns of nothing else.
    expect(worker.lines.filter((l) => (l.level ?? 0) >= 40)).toEqual([]);
    expect(await worker.stop()).toBe(0);
  });
});
