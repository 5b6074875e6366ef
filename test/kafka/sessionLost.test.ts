// A worker frozen (SIGSTOP) for longer than its session timeout, then thawed, on the real broker:
// the group has dropped it, so its partitions are lost, not revoked. What is checked:
// - the worker hears it (a 'partitions lost' line), drops those partitions without committing,
//   does not stop (no fatal error: a commit refused by the rebalance is not one), joins again and
//   finishes the input;
// - nothing lost, each effect applied once, per-key order (see robustness.ts for the exact
//   criteria; one worker and one state directory, so an effect recorded but not committed before
//   the loss is found again as a DUPLICATE).
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { readUntil } from './kafkaClient.js';
import { decided, prefilledScenario } from './disputes.js';
import { appliedCount, expectEachInputAppliedOnceInOrder, rebalanceLines } from './robustness.js';
import { Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  for (const w of workers) if (w.running) process.kill(w.pid, 'SIGCONT');
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

describe('orderly run: partitions lost after a session timeout, on Kafka', () => {
  it('drops lost partitions without committing, rejoins, and applies every decision once, in order', async () => {
    const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, 'lost', { count: 200, accounts: 20, partitions: 4 });
    // The worker's session timeout is 6 s (see worker.ts); commits every 2 s, so that some effects
    // are recorded but not committed when it freezes.
    const worker = new Worker({
      bootstrap,
      group,
      stateDir,
      topicPrefix: prefix,
      env: { ORDERLY_MODEL_LATENCY_MS: '200', ORDERLY_MAX_IN_FLIGHT: '2' },
      args: ['--commit-every-ms', '2000'],
    });
    workers.push(worker);
    await worker.waitFor('40 effects applied', () => appliedCount([worker]) >= 40);
    process.kill(worker.pid, 'SIGSTOP');
    await sleep(10_000);
    process.kill(worker.pid, 'SIGCONT');
    const appliedAtFreeze = appliedCount([worker]);

    await worker.waitFor('partitions lost', () => rebalanceLines(worker).lost.length > 0, 30_000);
    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
      timeoutMs: 90_000,
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${worker.stuck()}`,
    });
    const r = rebalanceLines(worker);
    expect(worker.running, 'the worker went on').toBe(true);
    expect(r.lost.flat().length).toBeGreaterThan(0);
    expect(r.assigned.length, 'assigned again after the loss').toBeGreaterThan(1);
    expect(worker.lines.filter((l) => l.msg === 'engine failed' || l.msg === 'Kafka log failed')).toEqual([]);
    expect(await worker.stop()).toBe(0);

    const summary = await expectEachInputAppliedOnceInOrder(inputs, output, [worker], [stateDir], group);
    console.log(
      `session lost test: ${appliedAtFreeze} applied before the freeze; lost ${r.lost.flat().length} partitions; ` +
        `${summary.duplicates} redelivered duplicates, ${summary.repeatedOutputs} repeated outputs`,
    );
  });
});

describe('orderly run: a session timeout the broker refuses', () => {
  it('stops the worker at once, naming --session-timeout-ms and the broker bounds, instead of polling on', async () => {
    const { prefix, group, stateDir } = await prefilledScenario(bootstrap, 'badsession', { count: 1, accounts: 1, partitions: 1 });
    // Below the broker's group.min.session.timeout.ms (6000 by default): the coordinator refuses the join.
    const worker = new Worker({ bootstrap, group, stateDir, topicPrefix: prefix, args: ['--session-timeout-ms', '10'] });
    workers.push(worker);
    expect(await worker.exit(30_000)).toBe(1);
    expect(worker.errors).toContain(
      "orderly run: stopped by a fatal error: Kafka refused this worker's session timeout (session.timeout.ms = 10 ms): the broker takes only values within its group.min.session.timeout.ms and group.max.session.timeout.ms (6000 and 1800000 ms by default); set --session-timeout-ms (kafka.sessionTimeoutMs) within them",
    );
  });
});
