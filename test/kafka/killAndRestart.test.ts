// kill -9 of the worker mid-run and a restart over the same state directory, on the real broker.
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { EffectRecord } from '../../src/engine/outputs.js';
import { openLevelStore } from '../../src/state/levelStore.js';
import { stateKeys } from '../../src/state/stateKeys.js';
import { createTopic, produce, readUntil } from './kafkaClient.js';
import { asInput, checkDecisions, decided, dedupe, disputes, scenario } from './disputes.js';
import { Worker, type WorkerOptions } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

/** Effects applied so far by all runs (outcome lines are written synchronously, so a killed run's are all there). */
function applied(runs: readonly Worker[]): number {
  return runs.reduce((n, w) => n + w.outcomes('APPLIED').length, 0);
}

describe('orderly run: kill -9 and restart on Kafka', () => {
  it('applies every decision exactly once across three kill -9s, and keeps per-account order', async () => {
    const { prefix, group, stateDir } = await scenario('crash');
    const inputs = disputes(200, 20);
    await createTopic(bootstrap, `${prefix}disputes`, 4);
    await produce(bootstrap, `${prefix}disputes`, inputs.map(asInput));
    // A slower model and fewer calls at once, so that each kill lands while calls are in flight.
    const env = { ORDERLY_MODEL_LATENCY_MS: '300', ORDERLY_MAX_IN_FLIGHT: '2' };
    const options: WorkerOptions = { bootstrap, group, stateDir, topicPrefix: prefix, env, args: ['--commit-every-ms', '2000'] };

    const runs: Worker[] = [];
    for (const killAfter of [40, 90, 140]) {
      const worker = new Worker(options);
      runs.push(worker);
      workers.push(worker);
      await worker.waitFor(`${killAfter} effects applied in all runs`, () => applied(runs) >= killAfter);
      await worker.kill();
    }
    const last = new Worker(options);
    runs.push(last);
    workers.push(last);

    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
      timeoutMs: 180_000,
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${last.tail()}`,
    });
    // Outputs may repeat after a kill (at-least-once); deduplicated by effect id, each input is
    // there once and each account's decisions are in input order.
    expect(checkDecisions(inputs, output)).toEqual([]);
    expect(await last.stop()).toBe(0);

    // Each run after a kill -9 found no checkpoint: it wiped its partitions' local state and
    // rebuilt it from the changelogs, which hold every acknowledged write.
    for (const run of runs.slice(1)) {
      const restored = run.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('restored the state of'));
      expect(restored.length, 'partitions restored after a kill').toBeGreaterThan(0);
      expect(restored.every((l) => l.mode === 'full')).toBe(true);
      expect(restored.some((l) => Number(l.wiped) > 0 && Number(l.records) > 0)).toBe(true);
    }
    // Exactly once in the worker's state: no effect id was applied twice by any run...
    const appliedIds = runs.flatMap((w) => w.outcomes('APPLIED').map((l) => String(l.effectId)));
    const twice = appliedIds.filter((id, i) => appliedIds.indexOf(id) !== i);
    expect(twice, 'effect ids applied twice').toEqual([]);
    // ...and every input has its effect record and its decision in LevelDB.
    const store = await openLevelStore(stateDir);
    try {
      const effects = await store.entries<EffectRecord>(stateKeys.effectPrefix('dispute-decisions'));
      expect(effects).toHaveLength(inputs.length);
      const effectIds = new Set(effects.map(([, record]) => record.effectId));
      for (const r of output) expect(effectIds.has(r.headers['orderly-effect-id']!)).toBe(true);
      const rows = await store.entries<{ action: string }>(stateKeys.tablePrefix('dispute-decisions'));
      expect(rows.map(([key]) => stateKeys.parse(key).rest).sort()).toEqual(inputs.map((d) => d.disputeId).sort());
    } finally {
      await store.close();
    }
    // Every input was applied (APPLIED) or found applied after a restart (DUPLICATE) by some run.
    const finished = new Set(runs.flatMap((w) => [...w.outcomes('APPLIED'), ...w.outcomes('DUPLICATE')].map((l) => String(l.effectId))));
    expect(finished.size).toBe(inputs.length);
    // The kills did land between an effect and its commit: restarts met redelivered, already applied events.
    const duplicates = runs.reduce((n, w) => n + w.outcomes('DUPLICATE').length, 0);
    console.log(`kill -9 test: ${runs.map((w) => w.outcomes('APPLIED').length).join('+')} applied, ${duplicates} redelivered duplicates, ${dedupe(output).copies} repeated outputs`);
    expect(duplicates, 'redelivered events found already applied').toBeGreaterThan(0);
  });
});
