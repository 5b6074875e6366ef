// `orderly run --stop-grace-ms`: on SIGTERM the model calls in flight may finish. The worker takes
// no new work, lets the calls under way answer, records their effects, commits them and leaves;
// without a grace they are given up at once and redone by the next owner.
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Dispute } from '../../testkit/scenarios/disputes.js';
import { asInput, decided, disputes, prefilledScenario, scenario } from './disputes.js';
import { createTopic, produce, readUntil } from './kafkaClient.js';
import { modelServer, type ModelReply } from './modelServer.js';
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
      describe: (r) => `${decided(r)} of ${inputs.length + 1} disputes decided\n${next.stuck()}`,
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
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${next.stuck()}`,
    });
    expect(await next.stop()).toBe(0);
    expect(next.outcomes('APPLIED')).toHaveLength(inputs.length);
    // The given-up calls were made twice: the price of stopping without a grace.
    expect(model.requests()).toBe(2 * inputs.length);
  });
});

/** A model that holds each answer until the test releases it by dispute id; counts the requests. */
async function heldModel(): Promise<{ url: string; requested: (disputeId: string) => boolean; requests: () => number; release: (disputeId: string) => void }> {
  const held = new Map<string, ModelReply>();
  const seen: string[] = [];
  const { url } = await modelServer((dispute: Dispute, reply) => {
    seen.push(dispute.disputeId);
    held.set(dispute.disputeId, reply);
  });
  return {
    url,
    requested: (id) => seen.includes(id),
    requests: () => seen.length,
    release(id) {
      const reply = held.get(id);
      if (!reply) throw new Error(`heldModel: no request for ${id} is held`);
      held.delete(id);
      reply.decide();
    },
  };
}

describe('orderly run --stop-grace-ms with a paused partition, on Kafka', () => {
  it('a call that ends inside the grace does not resume the paused partition: the stop leaves cleanly and the next owner runs the rest once', async () => {
    // One partition, 2 calls in flight, paused at 2 unfinished events: a1 and b1 run, a2 waits in Kafka.
    const names = await scenario('grace-paused');
    const topic = `${names.prefix}disputes`;
    await createTopic(bootstrap, topic, 1);
    const [a1, b1, a2] = [
      { disputeId: 'a1', account: 'acct-a', amount: 10, reason: 'not-received' },
      { disputeId: 'b1', account: 'acct-b', amount: 20, reason: 'not-received' },
      { disputeId: 'a2', account: 'acct-a', amount: 30, reason: 'not-received' },
    ];
    const model = await heldModel();
    const env = { ORDERLY_MODEL_URL: model.url, ORDERLY_MAX_IN_FLIGHT: '2' };
    const first = new Worker({
      bootstrap,
      group: names.group,
      topicPrefix: names.prefix,
      stateDir: join(names.stateDir, 'first'),
      env,
      args: ['--max-buffered', '2', '--stop-grace-ms', '60000'],
    });
    workers.push(first);
    await produce(bootstrap, topic, [asInput(a1), asInput(b1)]);
    await first.waitFor('a1 and b1 at the model', () => model.requested('a1') && model.requested('b1'));
    // Produced once the partition is paused, so only a resume can deliver it.
    await produce(bootstrap, topic, [asInput(a2)]);

    const exited = first.stop();
    await first.waitFor('the stop signal', (lines) => lines.some((l) => String(l.msg).startsWith('stopping')));
    // a1 answers inside the grace, while b1 is still held: its finish frees room in the partition's buffer.
    model.release('a1');
    await first.waitFor('a1 applied', () => first.outcomes('APPLIED').length === 1);
    // Time for a resumed partition to deliver a2 (the defect made the worker fail within a second);
    // the partition must stay paused, so there is no line to wait for.
    await sleep(3_000);
    expect(first.lines.filter((l) => (l.level ?? 0) >= 50)).toEqual([]);
    model.release('b1');
    expect(await exited).toBe(0);
    expect(first.outcomes('APPLIED')).toHaveLength(2);
    expect(model.requested('a2')).toBe(false);

    // The next worker of the group runs a2 once, and nothing before it again.
    const next = new Worker({ bootstrap, group: names.group, topicPrefix: names.prefix, stateDir: join(names.stateDir, 'next'), env });
    workers.push(next);
    await next.waitFor('a2 at the model', () => model.requested('a2'));
    model.release('a2');
    await readUntil(bootstrap, `${names.prefix}dispute-decisions`, (r) => decided(r) >= 3, {
      timeoutMs: 60_000,
      describe: (r) => `${decided(r)} of 3 disputes decided\n${next.stuck()}`,
    });
    expect(await next.stop()).toBe(0);
    expect(next.outcomes('APPLIED')).toHaveLength(1);
    expect(next.outcomes('DUPLICATE')).toEqual([]);
    expect(model.requests()).toBe(3);
  });
});
