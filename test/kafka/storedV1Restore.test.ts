// A worker of this code takes over a partition whose changelogs a worker before stored-format
// versions wrote (commit 9afca58: records without the orderly-format header), as in a rolling
// upgrade: the records are the stored-v1 fixture's, produced to the real broker.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { disputes } from '../fixtures/stored-v1/scenario.js';
import { createTopic, produce, readAll } from './kafkaClient.js';
import { scenario } from './disputes.js';
import { Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

interface FixtureRecord {
  readonly topic: string;
  readonly key: string;
  readonly value: string;
}

/** The fixture's text with its topics under the test's prefix (its keys and effect ids name the source topic). */
function prefixed(text: string, prefix: string): string {
  return text
    .replace(/(?<=^|\/|")disputes\/0\//g, `${prefix}disputes/0/`)
    .replace(/"topic":"disputes"/g, `"topic":"${prefix}disputes"`)
    .replace(/"topic":"dispute-decisions"/g, `"topic":"${prefix}dispute-decisions"`);
}

describe('a changelog written before stored-format versions, on Kafka', () => {
  it('is restored by a worker of this code: finished effects are DUPLICATE, the parked key stays parked, an attempt in progress keeps its count', async () => {
    const { prefix, group, stateDir } = await scenario('stored-v1');
    const fixture = JSON.parse(await readFile(fileURLToPath(new URL('../fixtures/stored-v1/changelog.json', import.meta.url)), 'utf8')) as FixtureRecord[];
    const byTopic = new Map<string, Array<{ key: string; value: string; partition: number }>>();
    for (const r of fixture) {
      const topic = r.topic.replace(/^disputes-v1-/, `${group}-`);
      byTopic.set(topic, [...(byTopic.get(topic) ?? []), { key: prefixed(r.key, prefix), value: prefixed(r.value, prefix), partition: 0 }]);
    }
    await createTopic(bootstrap, `${prefix}disputes`, 1);
    for (const [topic, records] of byTopic) {
      await createTopic(bootstrap, topic, 1, 1, { 'cleanup.policy': 'compact' });
      await produce(bootstrap, topic, records);
    }
    await produce(
      bootstrap,
      `${prefix}disputes`,
      disputes.map((d) => ({ key: d.account, value: JSON.stringify(d), partition: 0 })),
    );

    const worker = new Worker({ bootstrap, group, stateDir, topicPrefix: prefix, sourceModule: 'test/kafka/storedV1Topology.ts' });
    workers.push(worker);
    await worker.waitFor('offset 4 parked', () => worker.outcomes('PARKED').some((l) => l.offset === 4));

    const outcomeOf = (offset: number) =>
      worker
        .outcomes()
        .filter((l) => l.offset === offset)
        .map((l) => l.outcome);
    expect(outcomeOf(0)).toEqual(['DUPLICATE']);
    expect(outcomeOf(1)).toEqual(['DUPLICATE']);
    expect(outcomeOf(2)).not.toContain('APPLIED');
    expect(outcomeOf(3)).not.toContain('APPLIED');
    expect(worker.outcomes('APPLIED')).toEqual([]);
    expect(worker.lines.some((l) => typeof l.msg === 'string' && l.msg.startsWith('restored the state of') && l.msg.includes('full'))).toBe(true);

    // acct-C's park record: the fixture's first attempt (at the old worker's time) and two new ones.
    const parked = (await readAll(bootstrap, `${prefix}disputes.parked`)).map(
      (r) => JSON.parse(r.value!) as { effectId?: string; attempts?: number; errors?: Array<{ attempt: number; atMs: number }> },
    );
    const c = parked.find((p) => JSON.stringify(p).includes(`${prefix}disputes/0/4`));
    expect(c?.errors?.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(c?.errors?.[0]?.atMs).toBe(10_000);

    // What this worker wrote to the changelog carries the format version (4: before the value, no headers; tombstones carry none).
    const written = (await readAll(bootstrap, `${group}-decide-park-changelog`)).slice(byTopic.get(`${group}-decide-park-changelog`)!.length);
    expect(written.filter((r) => r.value !== null).length).toBeGreaterThan(0);
    for (const r of written) expect([r.headers, r.value === null || r.value.startsWith('v4:')]).toEqual([{}, true]);
  });
});
