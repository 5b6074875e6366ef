// A broker of a three-node cluster killed (kill -9 of its JVM) mid-run. The file starts its own
// cluster beside the suite's one-node broker: ports ORDERLY_TEST_KAFKA3_PORT (default 19600) to
// +5, in <worktree>/.orderly/kafka-3node-test, deleted afterwards. Every topic has three replicas
// and min.insync.replicas 2, so with one broker down the leaders move and writes acknowledged by
// all in-sync replicas go on. The broker killed is the leader of source partition 0. What is
// checked (see robustness.ts for the exact criteria):
// - processing goes on: effects are applied after the kill, the worker never stops by itself;
// - nothing lost, each effect applied once, per-key order.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { down, killNode, up } from '../../tools/kafka/broker.js';
import { createTopic, partitionReplicas, produce, readUntil } from './kafkaClient.js';
import { asInput, decided, disputes, scenario } from './disputes.js';
import { appliedCount, expectEachInputAppliedOnceInOrder, rebalanceLines } from './robustness.js';
import { REPO, Worker } from './worker.js';

const PORT = Number(process.env.ORDERLY_TEST_KAFKA3_PORT ?? 19600);
const DIR = join(REPO, '.orderly', 'kafka-3node-test');
const log = (line: string) => console.log(`[3-node cluster] ${line}`);

/** Retries `what` for up to 60 s: with a broker just gone, an admin request can time out until the leaders move. */
async function retrying<T>(what: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await what();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(1_000);
    }
  }
}
let bootstrap = '';
const workers: Worker[] = [];

beforeAll(async () => {
  const cluster = await up({ nodes: 3, port: PORT, dir: DIR, log, timeoutSeconds: 150 });
  bootstrap = cluster.bootstrapServers;
}, 320_000);

afterAll(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
  await down({ dir: DIR, purge: true, graceSeconds: 5, log });
}, 60_000);

describe('orderly run: a broker of three killed mid-run', () => {
  it('goes on processing with one broker down, and applies every decision once, in per-account order', async () => {
    const { prefix, group, stateDir } = await scenario('broker');
    const inputs = disputes(300, 20);
    const source = `${prefix}disputes`;
    await createTopic(bootstrap, source, 4, 3, { 'min.insync.replicas': '2' });
    await produce(bootstrap, source, inputs.map(asInput));
    // One call at a time per partition, 200 ms each: about 15 s of work, so the kill lands mid-run.
    const worker = new Worker({
      bootstrap,
      group,
      stateDir,
      topicPrefix: prefix,
      env: { ORDERLY_MODEL_LATENCY_MS: '200', ORDERLY_MAX_IN_FLIGHT: '1' },
    });
    workers.push(worker);
    await worker.waitFor('60 effects applied', () => appliedCount([worker]) >= 60);

    // The outputs the worker created have three replicas too (the cluster's default).
    for (const p of await partitionReplicas(bootstrap, `${prefix}dispute-decisions`)) expect(p.replicas).toHaveLength(3);
    const victim = (await partitionReplicas(bootstrap, source)).find((p) => p.partition === 0)!.leader;
    await killNode(victim, { dir: DIR, log });
    const appliedAtKill = appliedCount([worker]);
    log(`killed node ${victim} (leader of ${source}/0) at ${appliedAtKill} effects applied`);

    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
      timeoutMs: 150_000,
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${worker.stuck()}`,
    });
    // Processing went on with the broker down, and the leaders moved off it.
    expect(appliedAtKill).toBeLessThan(inputs.length);
    expect(worker.running, 'the worker kept running').toBe(true);
    for (const p of await retrying(() => partitionReplicas(bootstrap, source))) expect(p.leader).not.toBe(victim);
    expect(await worker.stop()).toBe(0);

    const summary = await expectEachInputAppliedOnceInOrder(inputs, output, [worker], [stateDir], group, bootstrap);
    const r = rebalanceLines(worker);
    const refused = worker.lines.filter((l) => l.msg === 'commit refused: a rebalance took these partitions').length;
    console.log(
      `broker failure test: ${summary.applied} applied (${appliedAtKill} before the kill), ${summary.duplicates} duplicates, ` +
        `${summary.repeatedOutputs} repeated outputs; ${r.assigned.length} assignments, ${r.revoking.length} revocations, ${r.lost.length} losses, ${refused} commits refused`,
    );
  });
});
