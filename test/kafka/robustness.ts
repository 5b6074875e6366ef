// Checks shared by the robustness tests (kills, rebalances, 429s, a broker down): what "applied
// once", "nothing lost" and "per-key order" mean, measured on the effects themselves.
//
// - Nothing lost: every input has a decision on `dispute-decisions` and an effect record in the
//   state of some worker, or had one that was pruned once committed past (a tombstone of its key
//   on the effects' changelog, kept there for its delete.retention.ms, ten minutes).
// - Effect applied once: (1) no effect id was reported APPLIED twice, by one worker process or by
//   two (a worker writes its outcome lines synchronously, so a killed run's lines are all there);
//   (2) across the state directories of all workers, each input has exactly one effect record: a
//   store may hold a copy restored from the changelog when its partition moved (the same record,
//   applied at the same time), but two records of one effect id applied at different times mean
//   two workers applied it; (3) on the
//   output, each dispute appears under one effect id only (checkDecisions). Repeated output copies
//   under the same effect id are legitimate (at-least-once output, dropped by readers by the
//   `orderly-effect-id` header) and only counted.
// - Per-key order: for each account, (1) its decisions on the output, each taken at the first
//   appearance of its effect id in partition-offset order, follow the input order (checkDecisions);
//   (2) its effect records still in the state (not pruned), ordered by input offset, have
//   non-decreasing appliedAtMs (all workers run on this machine's clock).
import { expect, inject } from 'vitest';
import type { EffectRecord } from '../../src/engine/outputs.js';
import { changelogRecordWrites } from '../../src/kafka/changelog/changelogRecords.js';
import type { StoreOp } from '../../src/ports/store.js';
import { openLevelStore } from '../../src/state/levelStore.js';
import { stateKeys } from '../../src/state/stateKeys.js';
import { SeededRandom } from '../../testkit/seededRandom.js';
import type { Dispute } from '../../testkit/scenarios/disputes.js';
import { checkDecisions, dedupe } from './disputes.js';
import { readAll, type ReadRecord } from './kafkaClient.js';
import type { Worker } from './worker.js';

/** A seeded random for a test: ORDERLY_TEST_SEED if set, else a fresh seed; printed, so a failure can be replayed. */
export function testRandom(test: string): SeededRandom {
  const fromEnv = process.env.ORDERLY_TEST_SEED;
  const seed = fromEnv === undefined ? (Date.now() ^ (process.pid << 16)) | 0 : Number(fromEnv);
  if (!Number.isInteger(seed)) throw new Error(`ORDERLY_TEST_SEED must be an integer, got '${fromEnv}'`);
  console.log(`${test}: seed ${seed} (ORDERLY_TEST_SEED=${seed} replays the same choices)`);
  return new SeededRandom(seed);
}

/** APPLIED outcomes so far, across worker processes. */
export function appliedCount(runs: readonly Worker[]): number {
  return runs.reduce((n, w) => n + w.outcomes('APPLIED').length, 0);
}

/** Every effect record in each of the state directories (opened one at a time; the workers must have exited). */
export async function effectRecords(stateDirs: readonly string[]): Promise<EffectRecord[][]> {
  const all: EffectRecord[][] = [];
  for (const dir of stateDirs) {
    const store = await openLevelStore(dir);
    try {
      // In the partitions' rings, and under effect ids (replays).
      const entries = [
        ...(await store.entries<EffectRecord>(stateKeys.ringPrefix('dispute-decisions'))),
        ...(await store.entries<EffectRecord>(stateKeys.effectPrefix('dispute-decisions'))),
      ];
      all.push(entries.map(([, record]) => record));
    } finally {
      await store.close();
    }
  }
  return all;
}

/** Every write a changelog record read back stands for (its own, and the effect records a row's record carries). */
export function changelogWrites(r: ReadRecord): StoreOp[] {
  return changelogRecordWrites({ key: r.key, value: r.value === null ? null : Buffer.from(r.value), headers: r.headers });
}

/** The effect records that rows' changelog records carry (stored formats 3 and 4). */
export function carriedEffectRecords(changelog: readonly ReadRecord[]): EffectRecord[] {
  return changelog.flatMap((r) =>
    changelogWrites(r)
      .slice(1)
      .map((op) => (op as { value: EffectRecord }).value),
  );
}

/** What the robustness tests print and check. */
export interface RunSummary {
  readonly applied: number;
  readonly duplicates: number;
  readonly repeatedOutputs: number;
}

/**
 * Asserts the criteria above (see the top of this file) over the output topic, the workers' log
 * lines and their state directories. Every worker must have exited.
 */
export async function expectEachInputAppliedOnceInOrder(
  inputs: readonly Dispute[],
  output: readonly ReadRecord[],
  runs: readonly Worker[],
  stateDirs: readonly string[],
  group: string,
  /** The cluster the workers ran on, where the effects' changelog is: the suite's broker unless said. */
  bootstrap: string = inject('kafkaBootstrap'),
): Promise<RunSummary> {
  // Output: nothing lost, nothing under two effect ids, per-account order of first appearances.
  expect(checkDecisions(inputs, output)).toEqual([]);

  // Outcome lines: no effect id APPLIED twice, by any run of any worker.
  const appliedIds = runs.flatMap((w) => w.outcomes('APPLIED').map((l) => String(l.effectId)));
  const seen = new Set<string>();
  const twice = appliedIds.filter((id) => seen.has(id) || !seen.add(id));
  expect(twice, 'effect ids reported APPLIED twice').toEqual([]);

  // State: one effect record per input across all stores (copies restored from the changelog are
  // one record) and the rows' changelog records, which carry them (a restore leaves out those
  // below the committed offset).
  const changelog = await readAll(bootstrap, `${group}-dispute-decisions-changelog`);
  const perStore = [...(await effectRecords(stateDirs)), carriedEffectRecords(changelog)];
  const byId = new Map<string, EffectRecord[]>();
  for (const r of perStore.flat()) byId.set(r.effectId, [...(byId.get(r.effectId) ?? []), r]);
  const appliedTwice = [...byId].filter(([, list]) => new Set(list.map((r) => r.appliedAtMs)).size > 1).map(([id]) => id);
  expect(appliedTwice, 'effect ids recorded by two workers at different times').toEqual([]);
  const records = [...byId.values()].map((list) => list[0]!);
  const disputeOf = new Map(output.map((r) => [r.headers['orderly-effect-id']!, (JSON.parse(r.value!) as Dispute).disputeId]));
  // Pruned records: tombstones of effect keys with no record left in any state directory.
  const pruned = new Set<string>();
  for (const r of changelog) {
    if (r.value !== null || !r.key?.startsWith('effect/')) continue;
    const effectId = stateKeys.parse(r.key).rest;
    if (!byId.has(effectId)) pruned.add(effectId);
  }
  const recordedDisputes = [...records.map((r) => r.effectId), ...pruned].map((id) => disputeOf.get(id) ?? `(no output for ${id})`);
  expect(recordedDisputes.sort()).toEqual(inputs.map((d) => d.disputeId).sort());

  // State: per account, effects applied in input (offset) order.
  const byKey = new Map<string, EffectRecord[]>();
  for (const r of records) byKey.set(`${r.key}`, [...(byKey.get(`${r.key}`) ?? []), r]);
  const outOfOrder: string[] = [];
  for (const [key, list] of byKey) {
    const sorted = [...list].sort((a, b) => a.offset - b.offset);
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i]!.appliedAtMs < sorted[i - 1]!.appliedAtMs)
        outOfOrder.push(`${key}: offset ${sorted[i]!.offset} applied before offset ${sorted[i - 1]!.offset}`);
    }
  }
  expect(outOfOrder, 'effects of one key applied out of input order').toEqual([]);

  return {
    applied: appliedIds.length,
    duplicates: runs.reduce((n, w) => n + w.outcomes('DUPLICATE').length, 0),
    repeatedOutputs: dedupe(output).copies,
  };
}

/** Rebalance lines of a worker's Kafka log (KafkaLog logs each at info). */
export function rebalanceLines(worker: Worker): { assigned: string[][]; revoking: string[][]; lost: string[][] } {
  const partitions = (msg: string) => worker.lines.filter((l) => l.msg === msg).map((l) => (l.partitions as string[] | undefined) ?? []);
  return { assigned: partitions('assigned'), revoking: partitions('revoking'), lost: partitions('partitions lost') };
}
