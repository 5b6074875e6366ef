// Issue 12 §2 and §3 on the real broker, in one worker run of `./bin/orderly run`: a poison event
// under park({ onExhausted: 'skip' }) is committed past, counted and logged at warn, and its account
// goes on; a hung model call and a hung effect are released through their signal at timeoutMs,
// each counted as a failed attempt, and their events applied at the next attempt (the effect's
// with its decision kept), their accounts going on.
import { afterEach, describe, expect, inject, it } from 'vitest';
import { EFFECT_ID_HEADER } from '../../src/engine/outputs.js';
import { committedOffsets, createTopic, produce, readUntil, type ReadRecord } from './kafkaClient.js';
import { asInput, checkDecisions, decided, disputeIdOf, disputes, scenario } from './disputes.js';
import { TIMEOUT_MS } from './disputesSkipAndTimeout.js';
import { Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

/** pino's number for warn. */
const WARN = 40;

describe("orderly run: onExhausted 'skip' and timeouts on Kafka", () => {
  it('skips a poison event and releases a hung model call and a hung effect; the three accounts go on', async () => {
    const { prefix, group, stateDir } = await scenario('skip-timeout');
    const special: Record<number, string> = { 5: 'unparseable', 6: 'hangs', 7: 'ledger-hangs' };
    const inputs = disputes(24, 4, (i) => special[i] ?? 'not-received');
    const [poison, hungCall, hungEffect] = [inputs[5]!, inputs[6]!, inputs[7]!];
    // Three accounts, each with later disputes that must not wait.
    expect(new Set([poison.account, hungCall.account, hungEffect.account]).size).toBe(3);
    await createTopic(bootstrap, `${prefix}disputes`, 2);
    await produce(bootstrap, `${prefix}disputes`, inputs.map(asInput));
    const worker = new Worker({ bootstrap, group, stateDir, topicPrefix: prefix, sourceModule: 'test/kafka/disputesSkipAndTimeout.ts' });
    workers.push(worker);

    // Every dispute but the poison is decided once, in its account's order.
    const good = inputs.filter((d) => d !== poison);
    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= good.length, {
      timeoutMs: 60_000,
      describe: (r) => `${decided(r)} of ${good.length} decided\n${worker.stuck()}`,
    });
    expect(checkDecisions(good, output)).toEqual([]);
    await worker.waitFor('the poison SKIPPED', () => worker.outcomes('SKIPPED').length > 0, 30_000);

    // The poison: skipped after its 3 attempts, logged at warn with its last error; nothing parked or dead-lettered.
    const skipped = worker.outcomes('SKIPPED');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatchObject({ level: WARN, msg: 'event SKIPPED', key: poison.account, attempt: 3 });
    expect(skipped[0]!.error).toMatch(/^agentStep 'decide': decision failed its schema: /);
    expect(steps(worker, String(skipped[0]!.effectId))).toEqual(['RETRY 1', 'RETRY 2', 'SKIPPED 3']);
    expect(worker.outcomes().filter((l) => ['PARKED', 'HELD', 'DEAD_LETTERED'].includes(String(l.outcome)))).toEqual([]);

    // The hung call and the hung effect: one attempt timed out, the next applied.
    const callId = effectIdOf(output, hungCall.disputeId);
    expect(steps(worker, callId)).toEqual(['RETRY 1', 'APPLIED']);
    expect(worker.outcomes('RETRY').find((l) => l.effectId === callId)!.error).toBe(`agentStep 'decide' timed out after ${TIMEOUT_MS} ms`);
    const effectId = effectIdOf(output, hungEffect.disputeId);
    expect(steps(worker, effectId)).toEqual(['RETRY 1', 'APPLIED']);
    expect(worker.outcomes('RETRY').find((l) => l.effectId === effectId)!.error).toBe(`applyOnce 'dispute-decisions' timed out after ${TIMEOUT_MS} ms`);

    // A clean stop commits the finished prefix: past the skipped event, to the end of each partition.
    expect(await worker.stop()).toBe(0);
    const counted = worker.lines.find((l) => l.msg === 'worker stopped')?.metrics as { outcomes: Record<string, number>; modelCalls: number } | undefined;
    expect(counted?.outcomes).toMatchObject({ SKIPPED: 1, APPLIED: good.length });
    // One call per good dispute, one more for the hung call, three for the poison, and none again for the hung effect (its decision is kept).
    expect(counted?.modelCalls).toBe(good.length + 1 + 3);
    const offsets = await committedOffsets(bootstrap, group, `${prefix}disputes`, 2);
    expect(offsets.reduce((sum: number, o) => sum + (o ?? 0), 0)).toBe(inputs.length);
  });
});

/** The outcomes logged for one event, with the attempt where there is one: `RETRY 1`, `APPLIED`. */
function steps(worker: Worker, effectId: string): string[] {
  return worker
    .outcomes()
    .filter((l) => l.effectId === effectId)
    .map((l) => (l.attempt === undefined ? String(l.outcome) : `${String(l.outcome)} ${String(l.attempt)}`));
}

function effectIdOf(output: readonly ReadRecord[], disputeId: string): string {
  const record = output.find((r) => disputeIdOf(r) === disputeId);
  if (!record) throw new Error(`no decision for ${disputeId}`);
  return record.headers[EFFECT_ID_HEADER]!;
}
