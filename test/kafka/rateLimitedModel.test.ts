// A model that answers 429 with a Retry-After longer than max.poll.interval.ms, on the real broker.
// The worker talks HTTP to a stand-in OpenAI-compatible server in this test process (the disputes
// example's ORDERLY_MODEL_URL path). What is checked:
// - the worker stays in its group: one assignment, no revocation and no lost partition in its log,
//   and no warning at all (librdkafka warns MAXPOLL when a consumer does not poll in time);
// - the Retry-After is honoured: no call reaches the model while it runs (beyond the calls already
//   on their way when the first 429 went out), and a 429 is not an attempt (nothing parked);
// - nothing lost, effects once, per-key order (see robustness.ts for the exact criteria).
import { afterEach, describe, expect, inject, it } from 'vitest';
import { readUntil } from './kafkaClient.js';
import { decided, prefilledScenario } from './disputes.js';
import { appliedCount, expectEachInputAppliedOnceInOrder, rebalanceLines } from './robustness.js';
import { join } from 'node:path';
import { modelServer } from './modelServer.js';
import { Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

const MAX_POLL_INTERVAL_MS = 7_000;
const RETRY_AFTER_S = 12;

/** What the stand-in model saw: each request's arrival, and what it answered. */
interface Request {
  readonly atMs: number;
  readonly status: number;
}

/**
 * An OpenAI-compatible chat-completions endpoint: answers the first `okFirst` requests, then 429
 * with `Retry-After: retryAfterS` to every request for `refuseForMs`, then answers again.
 */
async function standInModel(okFirst: number, refuseForMs: number, retryAfterS = RETRY_AFTER_S): Promise<{ url: string; requests: Request[] }> {
  const requests: Request[] = [];
  let refusingSince: number | undefined;
  const { url } = await modelServer((_dispute, reply) => {
    const now = Date.now();
    if (requests.length >= okFirst && refusingSince === undefined) refusingSince = now;
    if (refusingSince !== undefined && now < refusingSince + refuseForMs) {
      requests.push({ atMs: now, status: 429 });
      reply.rateLimited(retryAfterS);
      return;
    }
    requests.push({ atMs: now, status: 200 });
    reply.decide();
  });
  return { url, requests };
}

describe('orderly run: a model that answers 429 for longer than max.poll.interval.ms, on Kafka', () => {
  it(`stays in its group through a ${RETRY_AFTER_S} s Retry-After (max.poll.interval.ms ${MAX_POLL_INTERVAL_MS}) and loses nothing`, async () => {
    const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, '429', { count: 60, accounts: 6, partitions: 2 });
    // 40 answers, then 429s for 11 s: the calls refused wait the 12 s Retry-After, once. (The
    // gate then admits the budget it learned plus one, and more in rounds of 1, 2, 4, ... as they
    // are answered: the window's length is not known yet, docs/rate-limits.md.)
    const model = await standInModel(40, 11_000);
    const worker = new Worker({
      bootstrap,
      group,
      stateDir,
      topicPrefix: prefix,
      env: { ORDERLY_MODEL_URL: model.url, ORDERLY_MAX_IN_FLIGHT: '2' },
      args: ['--consumer-config', `max.poll.interval.ms=${MAX_POLL_INTERVAL_MS}`],
    });
    workers.push(worker);

    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
      timeoutMs: 90_000,
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${worker.stuck()}`,
    });
    // Rebalance lines up to now: stopping revokes every partition, on purpose.
    const rebalances = rebalanceLines(worker);
    const warnings = worker.lines.filter((l) => (l.level ?? 0) >= 40);
    expect(await worker.stop()).toBe(0);

    // The model did refuse, and for longer than max.poll.interval.ms.
    const refused = model.requests.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(worker.outcomes('RATE_LIMITED').length).toBe(refused.length);
    const firstRefusalMs = refused[0]!.atMs;
    const resumedMs = model.requests.find((r) => r.status === 200 && r.atMs > firstRefusalMs)!.atMs;
    console.log(`429 test: ${refused.length} calls refused; the model was called again ${resumedMs - firstRefusalMs} ms after the first 429`);
    expect(resumedMs - firstRefusalMs).toBeGreaterThan(MAX_POLL_INTERVAL_MS);
    // Retry-After honoured: after the calls already on their way (1 s of slack), none until it ends.
    const during = model.requests.filter((r) => r.atMs > firstRefusalMs + 1_000 && r.atMs < firstRefusalMs + RETRY_AFTER_S * 1_000 - 500);
    expect(during).toEqual([]);

    // Still in the group: assigned once, never revoked, nothing lost, no MAXPOLL or other warning.
    expect(rebalances.assigned).toHaveLength(1);
    expect(rebalances.assigned[0]!.sort()).toEqual([`${prefix}disputes/0`, `${prefix}disputes/1`]);
    expect(rebalances.revoking).toEqual([]);
    expect(rebalances.lost).toEqual([]);
    expect(warnings).toEqual([]);

    // A 429 is not an attempt: nothing parked; every input applied once, in order.
    expect(worker.outcomes('PARKED')).toEqual([]);
    const summary = await expectEachInputAppliedOnceInOrder(inputs, output, [worker], [stateDir], group);
    expect(summary.applied).toBe(inputs.length);
    expect(summary.repeatedOutputs).toBe(0);
  });

  it('warns at the default log level while the step stays refused, once per interval', async () => {
    const { prefix, group, stateDir } = await prefilledScenario(bootstrap, '429-warn', { count: 6, accounts: 3, partitions: 1 });
    // Every call refused, with a 1 s Retry-After: a quota that is gone, not a burst.
    const model = await standInModel(0, Number.MAX_SAFE_INTEGER, 1);
    const worker = new Worker({
      bootstrap,
      group,
      stateDir,
      topicPrefix: prefix,
      env: { ORDERLY_MODEL_URL: model.url, ORDERLY_MAX_IN_FLIGHT: '1' },
      args: ['--log-level', 'info', '--rate-limit-warn-ms', '3000'],
    });
    workers.push(worker);
    const warnings = () =>
      worker.lines.filter((l) => l.level === 40 && /^agentStep 'decide' has been rate-limited for \d+ s: \d+ calls refused \(429\)/.test(l.msg ?? ''));
    await worker.waitFor('two rate-limit warnings', () => warnings().length >= 2, 60_000);
    expect(await worker.stop()).toBe(0);

    const [first, second] = warnings();
    expect(first).toMatchObject({ step: 'decide', component: 'engine' });
    expect(Number(first!.forMs)).toBeGreaterThanOrEqual(3_000);
    expect(Number(first!.refusals)).toBeGreaterThan(1);
    expect(String(first!.msg)).toContain("Check the provider's quota and key, or lower the step's limit.calls");
    // Once per interval: the next one no sooner than 3 s after.
    expect(Number(second!.time) - Number(first!.time)).toBeGreaterThanOrEqual(3_000);
    expect(model.requests.every((r) => r.status === 429)).toBe(true);
  });

  it('gives partitions up and stops without waiting out a Retry-After: revoked work in flight is aborted and done once by the next owner', async () => {
    const { prefix, group, stateDir, inputs } = await prefilledScenario(bootstrap, '429-revoke', { count: 80, accounts: 16, partitions: 4 });
    // a's model: 20 answers, then 429s with a 20 s Retry-After (for longer than the test needs).
    // b's model answers every call: b's share is not held up by a's waits, and its gate learns
    // no budget from a refusal at the start of its first window.
    const modelA = await standInModel(20, 120_000, 20);
    const modelB = await standInModel(Number.MAX_SAFE_INTEGER, 0);
    const stateDirs = [join(stateDir, 'a'), join(stateDir, 'b')];
    const start = (dir: string, url: string) => {
      const worker = new Worker({ bootstrap, group, stateDir: dir, topicPrefix: prefix, env: { ORDERLY_MODEL_URL: url, ORDERLY_MAX_IN_FLIGHT: '2' } });
      workers.push(worker);
      return worker;
    };
    const a = start(stateDirs[0]!, modelA.url);
    await a.waitFor('a 429', () => a.outcomes('RATE_LIMITED').length > 0);
    const refusalEndsMs = modelA.requests.find((r) => r.status === 429)!.atMs + 20_000;

    // b joins while a's calls wait: a gives b its share at once, not when the Retry-After ends.
    const b = start(stateDirs[1]!, modelB.url);
    await b.waitFor('partitions', () => rebalanceLines(b).assigned.some((p) => p.length > 0));
    const revoked = a.lines.find((l) => l.msg === 'revoked');
    expect(revoked, 'a revoked partitions for b').toBeDefined();
    expect(Number(revoked!.time), 'a revoked before the Retry-After ended').toBeLessThan(refusalEndsMs);
    // And a leaves the same way: its stop does not wait either.
    expect(await a.stop()).toBe(0);
    const stoppedMs = Date.now();
    expect(stoppedMs, 'a stopped before the Retry-After ended').toBeLessThan(refusalEndsMs);

    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
      timeoutMs: 90_000,
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${b.stuck()}`,
    });
    expect(await b.stop()).toBe(0);
    console.log(
      `429 revoke test: a applied ${a.outcomes('APPLIED').length}, b ${b.outcomes('APPLIED').length}; a revoked ${refusalEndsMs - Number(revoked!.time)} ms and stopped ${refusalEndsMs - stoppedMs} ms before the Retry-After ended`,
    );
    expect(appliedCount([a, b])).toBe(inputs.length);
    expect(a.outcomes('PARKED').length + b.outcomes('PARKED').length).toBe(0);
    await expectEachInputAppliedOnceInOrder(inputs, output, [a, b], stateDirs, group);
  });
});
