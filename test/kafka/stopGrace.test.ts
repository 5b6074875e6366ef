// `orderly run --stop-grace-ms`: on SIGTERM the model calls in flight may finish. The worker takes
// no new work, lets the calls under way answer, records their effects, commits them and leaves;
// without a grace they are given up at once and redone by the next owner.
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { asInput, decided, disputes, prefilledScenario } from './disputes.js';
import { produce, readUntil } from './kafkaClient.js';
import { modelServer } from './modelServer.js';
import { Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

/** A model that answers every request `delayMs` after it came; counts the requests. */
async function slowModel(delayMs: number): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const { url } = await modelServer((_dispute, reply) => {
    requests += 1;
    setTimeout(() => reply.decide(), delayMs);
  });
  return { url, requests: () => requests };
}

describe('orderly run --stop-grace-ms, on Kafka', () => {
  it('lets the calls in flight at SIGTERM finish: their effects are applied and committed by the stopping worker, not redone', async () => {
    // 8 disputes on 8 accounts over 2 partitions, up to 8 calls in flight per partition: all 8 at once.
    const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, 'grace', { count: 8, accounts: 8, partitions: 2 });
    const model = await slowModel(3_000);
    const env = { ORDERLY_MODEL_URL: model.url, ORDERLY_MAX_IN_FLIGHT: '8' };
    const first = new Worker({ bootstrap, group, stateDir: join(stateDir, 'first'), topicPrefix: prefix, env, args: ['--stop-grace-ms', '20000'] });
    workers.push(first);
    await first.waitFor('8 model calls in flight', () => model.requests() === inputs.length);
    expect(await first.stop()).toBe(0);
    // Every call under way at the signal was answered, applied and committed before the exit.
    expect(first.outcomes('APPLIED')).toHaveLength(inputs.length);

    // The next worker of the group starts after them: it redoes nothing, and does the new one.
    const next = new Worker({ bootstrap, group, stateDir: join(stateDir, 'next'), topicPrefix: prefix, env });
    workers.push(next);
    const later = disputes(9, 9)[8]!;
    await produce(bootstrap, `${prefix}disputes`, [asInput({ ...later, disputeId: 'd-late' })]);
    await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length + 1, {
      timeoutMs: 60_000,
      describe: (r) => `${decided(r)} of ${inputs.length + 1} disputes decided\n${next.tail()}`,
    });
    expect(await next.stop()).toBe(0);
    expect(next.outcomes('APPLIED')).toHaveLength(1);
    expect(next.outcomes('DUPLICATE')).toEqual([]);
    expect(model.requests()).toBe(inputs.length + 1);
  });

  it('without a grace gives the calls in flight up at once: nothing of theirs is applied, and the next owner does them once', async () => {
    const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, 'nograce', { count: 8, accounts: 8, partitions: 2 });
    const model = await slowModel(3_000);
    const env = { ORDERLY_MODEL_URL: model.url, ORDERLY_MAX_IN_FLIGHT: '8' };
    const first = new Worker({ bootstrap, group, stateDir: join(stateDir, 'first'), topicPrefix: prefix, env });
    workers.push(first);
    await first.waitFor('8 model calls in flight', () => model.requests() === inputs.length);
    expect(await first.stop()).toBe(0);
    expect(first.outcomes('APPLIED')).toEqual([]);

    const next = new Worker({ bootstrap, group, stateDir: join(stateDir, 'next'), topicPrefix: prefix, env });
    workers.push(next);
    await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
      timeoutMs: 60_000,
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${next.tail()}`,
    });
    expect(await next.stop()).toBe(0);
    expect(next.outcomes('APPLIED')).toHaveLength(inputs.length);
    // The given-up calls were made twice: the price of stopping without a grace.
    expect(model.requests()).toBe(2 * inputs.length);
  });
});
