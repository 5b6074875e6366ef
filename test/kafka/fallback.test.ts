// Issue 12 §4 on the broker: one worker (`orderly run`, from source) whose model is down for good.
// After `afterMs` of refused calls the step's circuit opens (logged at warn, shown by
// orderly_circuit_state) and the fallback decides every dispute, once and in per-account order,
// marked 'fallback'; no dispute is parked. The stop ends the process at once, though the circuit's
// timer (half-open in 10 minutes) is pending: Worker.stop kills a worker still running after 60 s.
import { afterEach, expect, inject, it } from 'vitest';
import { exposition } from '../unit/metrics/exposition.js';
import { createTopic, produce, readUntil } from './kafkaClient.js';
import { asInput, checkDecisions, dedupe, disputes, scenario } from './disputes.js';
import { legacy } from './disputesAdoption.js';
import { Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

it('opens the circuit of a step whose model is down, and the fallback decides every event once, in order, marked fallback', async () => {
  const { prefix, group, stateDir } = await scenario('fallback');
  const inputs = disputes(24, 6);
  await createTopic(bootstrap, `${prefix}disputes`, 2);
  await produce(bootstrap, `${prefix}disputes`, inputs.map(asInput));
  const worker = new Worker({ bootstrap, group, stateDir, topicPrefix: prefix, sourceModule: 'test/kafka/disputesFallback.ts', args: ['--metrics-port', '0'] });
  workers.push(worker);

  const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => dedupe(r).unique.length >= inputs.length, {
    timeoutMs: 90_000,
    describe: (r) => `${dedupe(r).unique.length} of ${inputs.length} decided\n${worker.stuck()}`,
  });
  expect(checkDecisions(inputs, output)).toEqual([]);
  const applied = new Map(
    dedupe(output).unique.map((r) => [JSON.parse(r.value!).disputeId as string, JSON.parse(r.value!) as { action: string; decidedBy: string }]),
  );
  for (const d of inputs) expect(applied.get(d.disputeId), d.disputeId).toMatchObject({ action: legacy(d).action, decidedBy: 'fallback' });

  const opened = worker.lines.filter((l) => l.level === 40 && String(l.msg).includes('its circuit opened'));
  expect(opened.length).toBeGreaterThanOrEqual(1);
  // The opening says how the step's last call ended: the decide function's error.
  expect(String(opened[0]!.msg)).toContain('the model provider is down (503)');
  const url = String(worker.lines.find((l) => l.msg === 'metrics served')!.url);
  const metrics = exposition(await (await fetch(url)).text());
  expect(metrics.sum('orderly_decisions_total', { step: 'decide', by: 'fallback' })).toBe(inputs.length);
  expect(metrics.sum('orderly_decisions_total', { step: 'decide', by: 'agent' })).toBe(0);
  expect(metrics.sum('orderly_circuit_state', { step: 'decide', state: 'open' })).toBe(1);
  expect(metrics.sum('orderly_events_total', { outcome: 'PARKED' })).toBe(0);
  expect(metrics.sum('orderly_parked_keys')).toBe(0);
  expect(await worker.stop()).toBe(0);
}, 120_000);
