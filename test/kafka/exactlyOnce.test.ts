// --exactly-once on the real broker: a read_committed reader of the output sees every input's
// decision once, across a rebalance and a kill -9, where at-least-once would repeat some.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { PARK_REASON_HEADER } from '../../src/engine/parkRecords.js';
import type { ModelReply } from './modelServer.js';
import { modelServer } from './modelServer.js';
import { createTopic, produce, readAll, readUntil, type ReadRecord } from './kafkaClient.js';
import { asInput, checkDecisions, decided, dedupe, parkedDisputeId, prefilledScenario, scenario } from './disputes.js';
import { Worker, type WorkerOptions } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  for (const w of workers) if (w.running) process.kill(w.pid, 'SIGCONT');
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

function start(options: WorkerOptions): Worker {
  const worker = new Worker(options);
  workers.push(worker);
  return worker;
}

const applied = (runs: readonly Worker[]): number => runs.reduce((n, w) => n + w.outcomes('APPLIED').length, 0);

describe('orderly run --exactly-once on Kafka', () => {
  it('a read_committed reader sees each decision once across a rebalance and a kill -9', async () => {
    const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, 'eos', { count: 240, accounts: 24, partitions: 4 });
    const env = { ORDERLY_MODEL_LATENCY_MS: '150', ORDERLY_MAX_IN_FLIGHT: '2' };
    const worker = (dir: string): WorkerOptions => ({
      bootstrap,
      group,
      stateDir: dir,
      topicPrefix: prefix,
      env,
      args: ['--exactly-once', '--commit-every-ms', '300'],
    });

    const runs: Worker[] = [];
    const a = start(worker(`${stateDir}-a`));
    runs.push(a);
    await a.waitFor('60 effects applied', () => applied(runs) >= 60);
    // a dies with a transaction open: its LevelDB holds effects whose outputs the broker will
    // abort. Its restart (same state directory, same transactional id) fences the dead one and
    // must rebuild that state from the committed changelog, or those outputs would be lost.
    await a.kill();
    const again = start(worker(`${stateDir}-a`));
    runs.push(again);
    await again.waitFor('120 effects applied', () => applied(runs) >= 120);
    // A second worker joins: some partitions move to it, with their state.
    const b = start(worker(`${stateDir}-b`));
    runs.push(b);
    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
      timeoutMs: 180_000,
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${again.stuck()}\n${b.stuck()}`,
    });
    expect(checkDecisions(inputs, output)).toEqual([]);
    await Promise.all([again.stop(), b.stop()]);
    const all = await readAll(bootstrap, `${prefix}dispute-decisions`);
    // Exactly once: no effect id twice on the output, not even a copy with the same effect id.
    expect(dedupe(all).copies, 'decisions a read_committed reader sees more than once').toBe(0);
    expect(all).toHaveLength(inputs.length);
    // The restart did not trust its LevelDB: it rebuilt the state from the committed changelog.
    expect(again.lines.filter((l) => l.mode === 'full' && String(l.msg).startsWith('restored the state')).length).toBeGreaterThan(0);
    const redelivered = runs.reduce((n, w) => n + w.outcomes('DUPLICATE').length, 0);
    console.log(`exactly-once test: ${runs.map((w) => w.outcomes('APPLIED').length).join('+')} applied, ${redelivered} redelivered and found applied`);
  });

  it('a worker fenced out of its group with a transaction open throws it away: each decision once, nothing lost', async () => {
    const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, 'eos-fenced', { count: 240, accounts: 24, partitions: 4 });
    const env = { ORDERLY_MODEL_LATENCY_MS: '150', ORDERLY_MAX_IN_FLIGHT: '2' };
    // A transaction timeout longer than the freeze: this is the group fencing the worker out, not
    // the broker timing its transaction out (which fences its producer for good: it must restart).
    const worker = (dir: string): WorkerOptions => ({
      bootstrap,
      group,
      stateDir: dir,
      topicPrefix: prefix,
      env,
      args: ['--exactly-once', '--commit-every-ms', '300', '--transaction-timeout-ms', '30000'],
    });
    const a = start(worker(`${stateDir}-a`));
    const b = start(worker(`${stateDir}-b`));
    await a.waitFor('both workers working, 60 effects applied', () => applied([a, b]) >= 60 && applied([a]) > 0 && applied([b]) > 0);
    // a freezes with its transaction open for longer than its 6 s session: the group drops it and
    // b takes its partitions over, restoring their committed state. When a thaws, its open
    // transaction must never commit: b is deciding the same events.
    process.kill(a.pid, 'SIGSTOP');
    await sleep(10_000);
    process.kill(a.pid, 'SIGCONT');

    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
      timeoutMs: 180_000,
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${a.stuck()}\n${b.stuck()}`,
    });
    expect(checkDecisions(inputs, output)).toEqual([]);
    await a.waitFor(
      'a reset after its partitions were lost',
      (lines) => lines.some((l) => l.msg === 'partitions lost' || String(l.msg).startsWith('transaction aborted')),
      30_000,
    );
    await Promise.all([a.stop(), b.stop()]);
    const all = await readAll(bootstrap, `${prefix}dispute-decisions`);
    expect(dedupe(all).copies, 'decisions a read_committed reader sees more than once').toBe(0);
    expect(all).toHaveLength(inputs.length);
    expect(
      [...a.lines, ...b.lines].filter((l) => l.msg === 'engine failed' || l.msg === 'Kafka log failed'),
      'no worker stopped on the loss',
    ).toEqual([]);
  });

  it('a read_committed reader of the parking topic sees each parked and held event once, though a kill -9 makes them come again', async () => {
    const names = await scenario('eos-parked');
    const topic = `${names.prefix}disputes`;
    await createTopic(bootstrap, topic, 1);
    // One partition. x1 comes first and its answer is held, so no offset is committed past it,
    // while p1 (poison) is parked and p2, p3 of its account are held behind it: their park records
    // are committed in a transaction. After the kill -9 the next run gets all four again.
    const x1 = { disputeId: 'x1', account: 'acct-x', amount: 10, reason: 'not-received' };
    const [p1, p2, p3] = ['unparseable', 'not-received', 'not-received'].map((reason, i) => ({
      disputeId: `p${i + 1}`,
      account: 'acct-p',
      amount: 20,
      reason,
    }));
    let holdX1 = true;
    const held: ModelReply[] = [];
    const { url } = await modelServer((dispute, reply) => (dispute.disputeId === 'x1' && holdX1 ? held.push(reply) : reply.decide()));
    const worker = (): WorkerOptions => ({
      bootstrap,
      group: names.group,
      stateDir: names.stateDir,
      topicPrefix: names.prefix,
      env: { ORDERLY_MODEL_URL: url, ORDERLY_MAX_IN_FLIGHT: '4' },
      // Without the commit metadata: with it, the next run would skip p1, p2 and p3 as finished
      // (listed above x1's committed offset), and this test is of them coming again.
      args: ['--exactly-once', '--commit-every-ms', '300', '--commit-metadata-max-bytes', '0'],
    });
    const first = start(worker());
    await produce(bootstrap, topic, [x1, p1!, p2!, p3!].map(asInput));
    await first.waitFor('p1 parked, p2 and p3 held', () => first.outcomes('PARKED').length === 1 && first.outcomes('HELD').length === 2);
    await readUntil(bootstrap, `${topic}.parked`, (r) => r.length >= 3, {
      timeoutMs: 60_000,
      describe: (r) => `${r.length} of 3 park records committed\n${first.stuck()}`,
    });
    expect(held).toHaveLength(1);
    await first.kill();

    holdX1 = false;
    const next = start(worker());
    await readUntil(bootstrap, `${names.prefix}dispute-decisions`, (r) => decided(r) >= 1, {
      timeoutMs: 60_000,
      describe: () => `x1 not decided\n${next.stuck()}`,
    });
    // The next run met the parked and held events again (their offsets were never committed).
    await next.waitFor('p1 found parked, p2 and p3 found held', () => next.outcomes('PARKED').length === 1 && next.outcomes('HELD').length === 2);
    expect(await next.stop()).toBe(0);

    const parked = await readAll(bootstrap, `${topic}.parked`);
    expect(parkRecordsPerEvent(parked), 'park records a read_committed reader sees, per event').toEqual({ 'p1 POISON': 1, 'p2 HELD': 1, 'p3 HELD': 1 });
  });
});

/** How many park records of each event (named by its dispute id and park reason) a reader sees. */
function parkRecordsPerEvent(records: readonly ReadRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of records) {
    const name = `${parkedDisputeId(r)} ${r.headers[PARK_REASON_HEADER]}`;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}
