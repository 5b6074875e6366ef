// Poison events and bad payloads through `./bin/orderly run`, on the real broker.
import { afterEach, describe, expect, inject, it } from 'vitest';
import { PARK_REASON_HEADER } from '../../src/engine/parkRecords.js';
import { createTopic, produce, readAll, readUntil } from './kafkaClient.js';
import { asInput, checkDecisions, decided, disputeIdOf, disputes, parkedDisputeId, scenario } from './disputes.js';
import { Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

async function start(name: string, partitions = 2, sourceModule?: string) {
  const { prefix, group, stateDir } = await scenario(name);
  await createTopic(bootstrap, `${prefix}disputes`, partitions);
  const worker = new Worker({ bootstrap, group, stateDir, topicPrefix: prefix, ...(sourceModule ? { sourceModule } : {}) });
  workers.push(worker);
  return { prefix, worker };
}

describe('orderly run: bad payloads and poison events on Kafka', () => {
  it('sends a malformed payload to disputes.dlq with its error, and processes the rest', async () => {
    const { prefix, worker } = await start('dlq');
    const good = disputes(30, 5);
    await produce(bootstrap, `${prefix}disputes`, [
      ...good.slice(0, 10).map(asInput),
      { key: 'acct-00', value: '{"disputeId": "d-bad", "account": ' },
      { key: 'acct-01', value: JSON.stringify({ disputeId: 'd-no-amount', account: 'acct-01', reason: 'fraud' }) },
      ...good.slice(10).map(asInput),
    ]);

    const dlq = await readUntil(bootstrap, `${prefix}disputes.dlq`, (r) => r.length >= 2, {
      timeoutMs: 90_000,
      describe: (r) => `${r.length} dead letters\n${worker.stuck()}`,
    });
    expect(dlq).toHaveLength(2);
    const truncated = dlq.find((r) => r.value?.includes('d-bad'))!;
    expect(truncated.key).toBe('acct-00');
    expect(truncated.headers['orderly-error']).toMatch(/could not decode the value/);
    expect(truncated.headers['orderly-source']).toMatch(new RegExp(`^${prefix.replace(/\./g, '\\.')}disputes/\\d+/\\d+$`));
    const noAmount = dlq.find((r) => r.value?.includes('d-no-amount'))!;
    expect(noAmount.headers['orderly-error']).toMatch(/field 'amount' must be a number/);

    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= good.length, {
      timeoutMs: 90_000,
      describe: (r) => `${decided(r)} of ${good.length} decided\n${worker.stuck()}`,
    });
    expect(checkDecisions(good, output)).toEqual([]);
    expect(worker.outcomes('DEAD_LETTERED')).toHaveLength(2);
    expect(await worker.stop()).toBe(0);
  });

  it('parks a poison event on disputes.parked and holds the later events of its account', async () => {
    const { prefix, worker } = await start('park');
    const poisonAccount = 'acct-02';
    const inputs = disputes(40, 5, (i) => (i === 12 ? 'unparseable' : 'not-received'));
    const poison = inputs[12]!;
    expect(poison.account).toBe(poisonAccount);
    const held = inputs.slice(13).filter((d) => d.account === poisonAccount);
    const before = inputs.slice(0, 12).filter((d) => d.account === poisonAccount);
    const others = inputs.filter((d) => d.account !== poisonAccount);
    await produce(bootstrap, `${prefix}disputes`, inputs.map(asInput));

    // The poison's park record, then one HELD record for each later event of its account.
    const parked = await readUntil(bootstrap, `${prefix}disputes.parked`, (r) => new Set(r.map(parkedDisputeId)).size >= 1 + held.length, {
      timeoutMs: 90_000,
      describe: (r) => `${r.length} park records: ${r.map(parkedDisputeId).join(' ')}\n${worker.stuck()}`,
    });
    const poisonRecord = parked.find((r) => parkedDisputeId(r) === poison.disputeId)!;
    expect(poisonRecord.key).toBe(poisonAccount);
    expect(poisonRecord.headers[PARK_REASON_HEADER]).toBe('POISON');
    const body = JSON.parse(poisonRecord.value!) as { attempts: number; errors: string[]; step: string };
    expect(body.step).toBe('decide');
    expect(body.attempts).toBe(3);
    expect(body.errors).toHaveLength(3);
    for (const d of held) {
      const record = parked.find((r) => parkedDisputeId(r) === d.disputeId);
      expect(record?.headers[PARK_REASON_HEADER], `${d.disputeId} is held behind the poison`).toBe('HELD');
    }

    const expectedDecided = [...others, ...before];
    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= expectedDecided.length, {
      timeoutMs: 90_000,
      describe: (r) => `${decided(r)} of ${expectedDecided.length} decided\n${worker.stuck()}`,
    });
    expect(checkDecisions(expectedDecided, output)).toEqual([]);
    // Nothing of the poison's account after it reached the output, however long we look.
    const all = await readAll(bootstrap, `${prefix}dispute-decisions`);
    const decidedIds = new Set(all.map(disputeIdOf));
    for (const d of [poison, ...held]) expect(decidedIds.has(d.disputeId), `${d.disputeId} must not be decided`).toBe(false);
    expect(worker.outcomes('PARKED')).toHaveLength(1);
    expect(worker.outcomes('HELD')).toHaveLength(held.length);
    expect(await worker.stop()).toBe(0);
  });

  it("onExhausted 'dlq': a poison event goes to disputes.dlq with its attempts and errors, and its account goes on", async () => {
    const { prefix, worker } = await start('exhausted-dlq', 2, 'test/kafka/disputesDeadLettering.ts');
    const inputs = disputes(40, 5, (i) => (i === 12 ? 'unparseable' : 'not-received'));
    const poison = inputs[12]!;
    const good = inputs.filter((d) => d !== poison);
    const after = inputs.slice(13).filter((d) => d.account === poison.account);
    expect(after.length).toBeGreaterThan(0);
    await produce(bootstrap, `${prefix}disputes`, inputs.map(asInput));

    const dlq = await readUntil(bootstrap, `${prefix}disputes.dlq`, (r) => r.length >= 1, {
      timeoutMs: 90_000,
      describe: (r) => `${r.length} dead letters\n${worker.stuck()}`,
    });
    expect(dlq).toHaveLength(1);
    expect(dlq[0]!.key).toBe(poison.account);
    expect(JSON.parse(dlq[0]!.value!)).toEqual(poison);
    expect(dlq[0]!.headers['orderly-attempts']).toBe('3');
    expect(dlq[0]!.headers['orderly-error']).toMatch(/^agentStep 'decide': decision failed its schema/);
    expect((JSON.parse(dlq[0]!.headers['orderly-errors']!) as unknown[]).length).toBe(3);

    // Every other event is decided, the poison's account's later ones included: not held.
    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= good.length, {
      timeoutMs: 90_000,
      describe: (r) => `${decided(r)} of ${good.length} decided\n${worker.stuck()}`,
    });
    expect(checkDecisions(good, output)).toEqual([]);
    expect(await readAll(bootstrap, `${prefix}disputes.parked`)).toEqual([]);
    expect(worker.outcomes('DEAD_LETTERED')).toHaveLength(1);
    expect(worker.outcomes('PARKED')).toHaveLength(0);
    expect(await worker.stop()).toBe(0);
  });
});
