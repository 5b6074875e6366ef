// kill -9 of the worker at random moments, restarted each time over the same state directory, on
// the real broker. What is checked (see robustness.ts for the exact criteria):
// - nothing lost: every input has its decision on the output and its effect record in the state;
// - each effect applied once: no effect id APPLIED twice across all runs, one effect record per
//   input, each dispute under one effect id on the output (repeated copies under the same id are
//   at-least-once output and only counted);
// - per-key order: each account's decisions (first appearance per effect id) and effect records
//   follow its input order.
// The kill moments come from a seeded random (the seed is printed; ORDERLY_TEST_SEED replays it).
import { afterEach, describe, expect, inject, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { readAll, readUntil } from './kafkaClient.js';
import { checkDecisions, decided, dedupe, parkedDisputeId, prefilledScenario } from './disputes.js';
import { modelServer } from './modelServer.js';
import type { SeededRandom } from '../../testkit/seededRandom.js';
import { appliedCount, expectEachInputAppliedOnceInOrder, testRandom } from './robustness.js';
import { Worker, type WorkerOptions } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

const KILLS = 10;
const EOS_KILLS = 6;
const TWO_STEP_KILLS = 4;

describe('orderly run: kill -9 at random moments and restart, on Kafka', () => {
  it(`applies every decision exactly once across ${KILLS} kill -9s, and keeps per-account order`, async () => {
    const { runs, inputs, summary } = await killAndFinish('kill -9 test', 'crash', KILLS, { count: 400, accounts: 20, partitions: 4 });
    console.log(
      `kill -9 test: ${runs.map((w) => w.outcomes('APPLIED').length).join('+')} applied, ${summary.duplicates} redelivered duplicates, ${summary.repeatedOutputs} repeated outputs, ${skippedFinished(runs)} finished offsets listed in the commit metadata at assignments (skipped when redelivered)`,
    );
    // Every input was applied (APPLIED) or found applied after a restart (DUPLICATE) by some run;
    // a kill after the effect was recorded and before its outcome line leaves only the DUPLICATE.
    const finished = new Set(runs.flatMap((w) => [...w.outcomes('APPLIED'), ...w.outcomes('DUPLICATE')].map((l) => String(l.effectId))));
    expect(finished.size).toBe(inputs.length);
    // The kills did land between an effect and its commit: restarts met redelivered, already applied events.
    expect(summary.duplicates, 'redelivered events found already applied').toBeGreaterThan(0);
  });

  it(`a two-step topology (classify, then decide) at stored format 4 applies every decision once across ${TWO_STEP_KILLS} kill -9s, in per-account order`, async () => {
    const scenario = { count: 200, accounts: 10, partitions: 2 };
    // At stored format 4: rows' changelog records carry the effect records a restart must find.
    const { runs, summary } = await killAndFinish('kill -9 two-step test', 'crash-two-steps', TWO_STEP_KILLS, scenario, 'test/kafka/disputesTwoSteps.ts');
    console.log(`kill -9 two-step test: ${runs.map((w) => w.outcomes('APPLIED').length).join('+')} applied, ${summary.duplicates} redelivered duplicates`);
    // decide checks that classify came first: a decide without it would have failed and parked the event.
    expect(runs.flatMap((w) => w.outcomes('PARKED'))).toEqual([]);
  });

  it(`with --exactly-once and poison events, a read_committed reader sees each decision and each parking once across ${EOS_KILLS} kill -9s`, async () => {
    const random = testRandom('kill -9 exactly-once parking test');
    // Four poison events, on four accounts: each is parked and every later event of its account held.
    const poison = new Set([25, 62, 133, 207]);
    const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, 'crash-eos', {
      count: 400,
      accounts: 20,
      partitions: 4,
      reason: (i) => (poison.has(i) ? 'unparseable' : 'not-received'),
    });
    const parkedAccounts = new Set([...poison].map((i) => inputs[i]!.account));
    const parkedIds = inputs
      .filter((d, i) => parkedAccounts.has(d.account) && i >= Math.min(...[...poison].filter((p) => inputs[p]!.account === d.account)))
      .map((d) => d.disputeId);
    const decidable = inputs.filter((d) => !parkedIds.includes(d.disputeId));
    const env = { ORDERLY_MODEL_LATENCY_MS: '200', ORDERLY_MAX_IN_FLIGHT: '2' };
    const args = ['--exactly-once', '--commit-every-ms', '300'];
    const staticMember: WorkerOptions = { bootstrap, group, stateDir, topicPrefix: prefix, env, args: [...args, '--instance-id', `${prefix}worker`] };
    const newMember: WorkerOptions = { ...staticMember, args };

    const runs = await killRepeatedly(random, EOS_KILLS, staticMember, newMember);
    const last = new Worker(staticMember);
    runs.push(last);
    workers.push(last);
    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= decidable.length, {
      timeoutMs: 120_000,
      describe: (r) => `${decided(r)} of ${decidable.length} disputes decided\n${last.stuck()}`,
    });
    await readUntil(bootstrap, `${prefix}disputes.parked`, (r) => new Set(r.map(parkedDisputeId)).size >= parkedIds.length, {
      timeoutMs: 60_000,
      describe: (r) => `${new Set(r.map(parkedDisputeId)).size} of ${parkedIds.length} events parked or held\n${last.stuck()}`,
    });
    expect(await last.stop()).toBe(0);
    expect(checkDecisions(decidable, output)).toEqual([]);
    expect(dedupe(output).copies, 'decisions a read_committed reader sees more than once').toBe(0);

    const parked = await readAll(bootstrap, `${prefix}disputes.parked`);
    const perEvent = new Map<string, number>();
    for (const r of parked) perEvent.set(parkedDisputeId(r), (perEvent.get(parkedDisputeId(r)) ?? 0) + 1);
    const copies = parked.length - perEvent.size;
    const parkedAgain = runs.reduce((n, w) => n + w.outcomes('PARKED').length + w.outcomes('HELD').length, 0) - parkedIds.length;
    console.log(
      `kill -9 exactly-once parking test: ${parked.length} park records for ${perEvent.size} events (${copies} copies); ${parkedAgain} PARKED or HELD outcomes past one per event (met again after a kill, or redone after an aborted transaction)`,
    );
    expect([...perEvent.keys()].sort()).toEqual([...parkedIds].sort());
    expect(copies, 'park records a read_committed reader sees more than once').toBe(0);
  });

  // The finished events above an unfinished one travel in the commit's metadata (docs/delivery.md):
  // a kill -9 while one call hangs, then a restart that must skip the eleven events finished above it.
  for (const exactlyOnce of [false, true]) {
    it(`${exactlyOnce ? 'with --exactly-once, ' : ''}after a kill -9 while one call hangs, the restarted worker skips the events the last commit listed as finished above it`, async () => {
      const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, exactlyOnce ? 'skip-eos' : 'skip', {
        count: 12,
        accounts: 12,
        partitions: 1,
      });
      const stuck = inputs[0]!.disputeId;
      let held = false;
      const { url } = await modelServer((dispute, reply) => {
        // The first call for the first dispute never ends: its worker is killed while it waits.
        if (dispute.disputeId === stuck && !held) {
          held = true;
          return;
        }
        reply.decide();
      });
      const options: WorkerOptions = {
        bootstrap,
        group,
        stateDir,
        topicPrefix: prefix,
        env: { ORDERLY_MODEL_URL: url, ORDERLY_MAX_IN_FLIGHT: '4' },
        args: ['--instance-id', `${prefix}worker`, ...(exactlyOnce ? ['--exactly-once'] : [])],
      };
      const first = new Worker(options);
      workers.push(first);
      await first.waitFor('the 11 other events applied', () => first.outcomes('APPLIED').length === inputs.length - 1);
      // An event's APPLIED line comes before it finishes (on the staged path, when its write is
      // durable): wait for the commit whose metadata lists all eleven, not just any later commit.
      const others = inputs.length - 1;
      await first.waitFor(
        `a commit listing the ${others} finished above the stuck one`,
        (lines) => lines.some((l) => l.msg === 'committed' && l.finishedAbove === others),
        30_000,
      );
      await first.kill();

      const second = new Worker(options);
      workers.push(second);
      const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
        timeoutMs: 60_000,
        describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${second.stuck()}`,
      });
      expect(await second.stop()).toBe(0);
      const resumed = second.lines.filter((l) => l.msg === 'finished offsets above the committed one: skipped when redelivered');
      expect(resumed.map((l) => [l.offset, l.finishedAbove])).toEqual([[0, inputs.length - 1]]);
      // Only the stuck event runs again: no DUPLICATE, no output sent again.
      expect(second.outcomes().map((l) => [l.offset, l.outcome])).toEqual([[0, 'APPLIED']]);
      expect(checkDecisions(inputs, output)).toEqual([]);
      expect(dedupe(output).copies, 'decisions sent twice').toBe(0);
    });
  }
});

/**
 * A prefilled scenario run through `kills` kill -9s and a last worker that decides every input;
 * checks that each input was applied once, in per-account order. A slower model and few calls at
 * once, so that kills land while calls are in flight. Most runs use static membership: a restarted
 * worker takes its place at once instead of waiting for the killed one's session (6 s) to time
 * out, which keeps the restarts short; some runs join as a new member, so that a restart after a
 * crash goes through a rebalance too.
 */
async function killAndFinish(
  seedName: string,
  name: string,
  kills: number,
  scenario: { count: number; accounts: number; partitions: number },
  sourceModule?: string,
  args: readonly string[] = [],
) {
  const random = testRandom(seedName);
  const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, name, scenario);
  const env = { ORDERLY_MODEL_LATENCY_MS: '200', ORDERLY_MAX_IN_FLIGHT: '2' };
  const staticMember: WorkerOptions = {
    bootstrap,
    group,
    stateDir,
    topicPrefix: prefix,
    env,
    ...(sourceModule ? { sourceModule } : {}),
    args: [...args, '--instance-id', `${prefix}worker`],
  };
  const newMember: WorkerOptions = { ...staticMember, args: [...args] };

  const runs = await killRepeatedly(random, kills, staticMember, newMember);
  expect(appliedCount(runs), 'the kills landed before the end of the input').toBeLessThan(inputs.length);
  const last = new Worker(staticMember);
  runs.push(last);
  workers.push(last);
  const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
    timeoutMs: 120_000,
    describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${last.stuck()}`,
  });
  expect(await last.stop()).toBe(0);
  const summary = await expectEachInputAppliedOnceInOrder(inputs, output, runs, [stateDir], group);
  return { runs, inputs, summary };
}

/** Finished offsets the workers skipped when they came again, as their commit's metadata listed them (logged at each assignment). */
function skippedFinished(runs: readonly Worker[]): number {
  return runs.reduce(
    (n, w) =>
      n +
      w.lines.filter((l) => l.msg === 'finished offsets above the committed one: skipped when redelivered').reduce((m, l) => m + Number(l.finishedAbove), 0),
    0,
  );
}

/**
 * Starts a worker and kill -9s it, `kills` times: mostly as a static member (a restart takes its
 * place at once), sometimes as a new member (a restart goes through a rebalance); mostly at a
 * random moment after its first finished event, sometimes while it starts. Prints the moments.
 */
async function killRepeatedly(random: SeededRandom, kills: number, staticMember: WorkerOptions, newMember: WorkerOptions): Promise<Worker[]> {
  const runs: Worker[] = [];
  const moments: string[] = [];
  for (let kill = 1; kill <= kills; kill++) {
    const joinsAsNew = random.next() < 0.25;
    const worker = new Worker(joinsAsNew ? newMember : staticMember);
    runs.push(worker);
    workers.push(worker);
    const spawnedAt = Date.now();
    if (random.next() < 0.2) {
      // Sometimes while it starts: connecting, joining, restoring.
      await sleep(random.int(0, 1_500));
      moments.push(`${Date.now() - spawnedAt} ms after spawn`);
    } else {
      // Mostly while it works: after its first finished event, at a random moment.
      await worker.waitFor('a finished event', () => worker.outcomes().some((l) => l.outcome === 'APPLIED' || l.outcome === 'DUPLICATE'));
      const delayMs = random.int(0, 1_200);
      await sleep(delayMs);
      moments.push(`${delayMs} ms after its first finished event`);
    }
    await worker.kill();
    moments[moments.length - 1] += ` (${appliedCount(runs)} applied so far${joinsAsNew ? '; joined as a new member' : ''})`;
  }
  console.log(`kill -9 moments:\n  ${moments.join('\n  ')}`);
  return runs;
}
