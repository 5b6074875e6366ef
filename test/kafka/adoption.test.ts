// Issue 12 §4 on the broker: one worker (`orderly run`, from source) with a route and a shadow.
// The routine disputes are decided by rule, the others by the old rules with the agent in shadow:
// the output carries who decided, <topic>.shadow holds one record per shadowed dispute, each
// disagreement is logged with its key, and /metrics counts decisions by who made them.
import { afterEach, expect, inject, it } from 'vitest';
import type { ShadowRecord } from '../../src/engine/shadowRecords.js';
import { EFFECT_ID_HEADER } from '../../src/engine/outputs.js';
import { standInDecision } from '../../testkit/scenarios/disputes.js';
import { exposition } from '../unit/metrics/exposition.js';
import { createTopic, produce, readUntil } from './kafkaClient.js';
import { asInput, checkDecisions, dedupe, disputes, scenario } from './disputes.js';
import { legacy, routine } from './disputesAdoption.js';
import { Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

interface Applied {
  readonly disputeId: string;
  readonly account: string;
  readonly action: string;
  readonly decidedBy: string;
}

it('routes routine disputes to the rule, applies the old rules with the agent in shadow, and writes every shadow decision to <topic>.shadow', async () => {
  const { prefix, group, stateDir } = await scenario('adoption');
  const inputs = disputes(40, 6);
  await createTopic(bootstrap, `${prefix}disputes`, 2);
  await produce(bootstrap, `${prefix}disputes`, inputs.map(asInput));
  const worker = new Worker({ bootstrap, group, stateDir, topicPrefix: prefix, sourceModule: 'test/kafka/disputesAdoption.ts', args: ['--metrics-port', '0'] });
  workers.push(worker);

  const routed = inputs.filter((d) => routine(d) !== undefined);
  const shadowed = inputs.filter((d) => routine(d) === undefined);
  const disagreeing = shadowed.filter((d) => standInDecision(d).action !== legacy(d).action);
  expect(routed.length).toBeGreaterThan(0);
  expect(disagreeing.length).toBeGreaterThan(0);

  const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => dedupe(r).unique.length >= inputs.length, {
    timeoutMs: 90_000,
    describe: (r) => `${dedupe(r).unique.length} of ${inputs.length} decided\n${worker.stuck()}`,
  });
  expect(checkDecisions(inputs, output)).toEqual([]);
  const applied = new Map(dedupe(output).unique.map((r) => [(JSON.parse(r.value!) as Applied).disputeId, JSON.parse(r.value!) as Applied]));
  for (const d of routed) expect(applied.get(d.disputeId), d.disputeId).toMatchObject({ action: 'refund', decidedBy: 'rule' });
  for (const d of shadowed) expect(applied.get(d.disputeId), d.disputeId).toMatchObject({ action: legacy(d).action, decidedBy: 'rule' });

  const shadows = await readUntil(bootstrap, `${prefix}disputes.shadow`, (r) => dedupe(r).unique.length >= shadowed.length, {
    timeoutMs: 30_000,
    describe: (r) => `${dedupe(r).unique.length} of ${shadowed.length} shadow records\n${worker.stuck()}`,
  });
  // Each shadow record names its dispute by effect id, as the output does; only the shadowed disputes have one.
  const disputeOf = new Map(dedupe(output).unique.map((r) => [r.headers[EFFECT_ID_HEADER]!, (JSON.parse(r.value!) as Applied).disputeId]));
  const records = dedupe(shadows).unique.map((r) => ({ key: r.key, body: JSON.parse(r.value!) as ShadowRecord }));
  expect(new Set(records.map((r) => disputeOf.get(r.body.effectId)))).toEqual(new Set(shadowed.map((d) => d.disputeId)));
  for (const { key, body } of records) {
    const dispute = inputs.find((d) => d.disputeId === disputeOf.get(body.effectId))!;
    expect(key).toBe(dispute.account);
    expect(body).toMatchObject({ version: 1, step: 'decide', shadow: 'legacy', agent: standInDecision(dispute), applied: legacy(dispute) });
    expect(body.agrees, dispute.disputeId).toBe(standInDecision(dispute).action === legacy(dispute).action);
  }

  await worker.waitFor('the disagreements logged', (lines) => lines.filter((l) => l.msg?.startsWith('shadow disagreed on key')).length >= disagreeing.length);
  const logged = worker.lines.filter((l) => l.msg?.startsWith('shadow disagreed on key')).map((l) => String(l.key));
  expect(new Set(logged)).toEqual(new Set(disagreeing.map((d) => d.account)));

  const url = String(worker.lines.find((l) => l.msg === 'metrics served')!.url);
  const metrics = exposition(await (await fetch(url)).text());
  expect(metrics.sum('orderly_decisions_total', { step: 'decide', by: 'rule' })).toBe(inputs.length);
  expect(metrics.sum('orderly_shadow_disagreements_total', { step: 'decide' })).toBe(disagreeing.length);
  expect(await worker.stop()).toBe(0);
}, 120_000);
