// Durable steps on the broker: a worker killed (kill -9) between two durable steps of an event; the
// worker restarted over the same group (its state restored from the changelogs) runs the step
// that completed not again, and the interrupted one again. The tool writes each run to a file.
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, inject, it } from 'vitest';
import { checkDecisions, decided, prefilledScenario } from './disputes.js';
import { readUntil } from './kafkaClient.js';
import { Worker, type WorkerOptions } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

/** The tool's runs so far: effect id, step and the worker's pid, one a line. */
async function toolRuns(file: string): Promise<Array<{ effectId: string; step: string; pid: number }>> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [effectId, step, pid] = line.split('\t');
      return { effectId: effectId!, step: step!, pid: Number(pid) };
    });
}

it('a worker killed between two durable steps: the restarted worker does not run the completed step again', async () => {
  // Two disputes of one account: the second waits behind the first.
  const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, 'durable-steps', { count: 2, accounts: 1, partitions: 1 });
  const file = join(dirname(stateDir), 'tool-runs.tsv');
  const options: WorkerOptions = {
    bootstrap,
    group,
    stateDir,
    topicPrefix: prefix,
    sourceModule: 'test/kafka/disputesDurableSteps.ts',
    // Static membership: the restarted worker takes the partition at once.
    args: ['--instance-id', `${prefix}worker`],
    env: { ORDERLY_TOOL_LOG: file },
  };
  const first = new Worker({ ...options, env: { ...options.env, ORDERLY_TOOL_HANG: 'open-case' } });
  workers.push(first);
  const firstEvent = `${prefix}disputes/0/0`;
  // open-case begins only once lookup-account's journal entry is acknowledged by the broker.
  const deadline = Date.now() + 90_000;
  while (!(await toolRuns(file)).some((r) => r.step === 'open-case')) {
    if (!first.running || Date.now() > deadline) throw new Error(`the first worker never reached open-case\n${first.tail()}`);
    await sleep(100);
  }
  await first.kill();

  const second = new Worker(options);
  workers.push(second);
  const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
    timeoutMs: 90_000,
    describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${second.stuck()}`,
  });
  expect(await second.stop()).toBe(0);
  expect(checkDecisions(inputs, output)).toEqual([]);

  const runs = await toolRuns(file);
  expect(runs.filter((r) => r.effectId === firstEvent).map((r) => [r.step, r.pid])).toEqual([
    ['lookup-account', first.pid],
    ['open-case', first.pid],
    ['open-case', second.pid],
  ]);
  expect(runs.filter((r) => r.effectId === `${prefix}disputes/0/1`).map((r) => [r.step, r.pid])).toEqual([
    ['lookup-account', second.pid],
    ['open-case', second.pid],
  ]);
  // The restored journal was read: the restart's log says the partition's state came from its changelogs.
  expect(second.lines.some((l) => String(l.msg).startsWith('restored the state of'))).toBe(true);
});
