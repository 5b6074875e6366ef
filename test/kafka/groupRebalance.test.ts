// Two, then three workers in one consumer group, one joining and one leaving mid-run, on the real
// broker. Each worker is its own process with its own state directory, as in production. What is
// checked (see robustness.ts for the exact criteria):
// - nothing lost: every input has its decision on the output and its effect record in the state
//   of one of the workers;
// - each effect applied once across workers: no effect id APPLIED by two workers (or twice by
//   one), no effect id recorded in two workers' stores, each dispute under one effect id on the
//   output; a partition changes owner only after its old owner committed what it finished
//   (cooperative rebalancing: revoked work in flight is aborted, the finished prefix committed);
// - per-key order across workers: each account's decisions (first appearance per effect id) and
//   its effect records, whichever worker applied them, follow its input order.
import { join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { readUntil } from './kafkaClient.js';
import { decided, prefilledScenario } from './disputes.js';
import { appliedCount, expectEachInputAppliedOnceInOrder, rebalanceLines } from './robustness.js';
import { Worker, type WorkerOptions } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

describe('orderly run: workers joining and leaving one group, on Kafka', () => {
  it('applies every decision once and in per-account order while a third worker joins and a first one leaves', async () => {
    const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, 'group', { count: 360, accounts: 30, partitions: 6 });
    // One call at a time per partition, each 300 ms: the run takes long enough (about 20 s) for
    // both rebalances to happen in the middle of it, whatever the number of workers.
    const env = { ORDERLY_MODEL_LATENCY_MS: '300', ORDERLY_MAX_IN_FLIGHT: '1' };
    const stateDirs = ['a', 'b', 'c'].map((name) => join(stateDir, name));
    const options = (i: number): WorkerOptions => ({ bootstrap, group, stateDir: stateDirs[i]!, topicPrefix: prefix, env });
    const start = (i: number) => {
      const worker = new Worker(options(i));
      workers.push(worker);
      return worker;
    };

    const [a, b] = [start(0), start(1)];
    const all = [a, b];
    await b.waitFor('partitions', () => rebalanceLines(b).assigned.some((p) => p.length > 0));
    await a.waitFor('60 effects applied', () => appliedCount(all) >= 60);

    const c = start(2);
    all.push(c);
    await c.waitFor('an effect applied by the joining worker', () => c.outcomes('APPLIED').length > 0);
    const joinedAt = appliedCount(all);
    // Three workers share the partitions for a while before the first one leaves.
    await c.waitFor('40 more effects applied by three workers', () => appliedCount(all) >= joinedAt + 40);

    expect(await a.stop(), 'the leaving worker stops cleanly').toBe(0);
    const leftAt = appliedCount(all);

    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
      timeoutMs: 120_000,
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${b.stuck()}\n${c.stuck()}`,
    });
    expect(await b.stop()).toBe(0);
    expect(await c.stop()).toBe(0);
    console.log(
      `group test: c joined at ${joinedAt} applied, a left at ${leftAt}; applied by a, b, c: ${all.map((w) => w.outcomes('APPLIED').length).join(', ')}`,
    );

    // Both changes happened mid-run and moved partitions: to c when it joined, from a when it left.
    expect(joinedAt).toBeLessThan(inputs.length);
    expect(leftAt).toBeLessThan(inputs.length);
    const [ra, rb, rc] = all.map(rebalanceLines);
    expect(ra!.revoking.flat().length + rb!.revoking.flat().length, 'partitions revoked for the joining worker').toBeGreaterThan(0);
    expect(rb!.assigned.length + rc!.assigned.length, 'partitions of the leaving worker assigned again').toBeGreaterThan(2);
    for (const w of all) expect(w.outcomes('APPLIED').length, 'every worker applied some').toBeGreaterThan(0);
    // Cooperative, orderly changes: no partition was lost, no commit failed for good.
    for (const r of [ra!, rb!, rc!]) expect(r.lost).toEqual([]);

    const summary = await expectEachInputAppliedOnceInOrder(inputs, output, all, stateDirs, group);
    console.log(`group test: ${summary.applied} applied, ${summary.duplicates} redelivered duplicates, ${summary.repeatedOutputs} repeated outputs`);
  });
});
