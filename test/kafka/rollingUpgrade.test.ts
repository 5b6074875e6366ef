// A rolling upgrade on the real broker, from the code before stored formats had versions (commit
// 9afca58: it writes version-1 state, docs/state.md) to this code. Two workers of the old code
// (built from this clone's git history by commitBuild.ts) share a group; each in turn is stopped
// and started again with this code on its own state directory, as a rolling deploy does:
// old A + old B -> stop B, new B -> kill A, new A. In between, the new B stops once for a while
// (a restart, or one instance rolled back), so that partitions move every way while both
// versions run: old -> new, new -> old, new -> new. Disputes are written all along, enough to
// keep every partition busy, so each move happens with work in flight; each step waits until
// the partitions it moved are running on their new owner, as a deploy waits for readiness. The
// old A is killed (kill -9) rather than stopped, having committed nothing on a timer, so that the
// new workers meet many events it applied and did not commit: they must find those effects in the
// state the old code wrote, or apply them twice.
// What is checked (robustness.ts): every dispute applied once and in per-account order, nothing
// lost, over the output, the outcome lines of all five processes and both state directories;
// each new worker restored partitions; new workers found effects of the killed old A applied; the effects' changelog holds records of both formats (no
// version header, as 9afca58 writes them, and orderly-format: 2).
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { partitionForKey } from '../../testkit/murmur2.js';
import type { Dispute } from '../../testkit/scenarios/disputes.js';
import { buildOfCommit } from './commitBuild.js';
import { asInput, decided, disputes, scenario } from './disputes.js';
import { createTopic, produce, readAll, readUntil } from './kafkaClient.js';
import { expectEachInputAppliedOnceInOrder, rebalanceLines } from './robustness.js';
import { Worker } from './worker.js';

/** The last commit before stored-format versions: its workers write state without a version. */
const OLD_COMMIT = '9afca58';
const PARTITIONS = 6;
const ACCOUNTS = 24;
/** Disputes written and not yet finished, below which more are written: about 4 s of work. */
const BACKLOG = 100;
const BATCH = 60;

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
let oldBuild: string;

beforeAll(async () => {
  oldBuild = await buildOfCommit(OLD_COMMIT);
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

/** The partitions `worker` owns now, from its rebalance lines in order. */
function owned(worker: Worker): Set<string> {
  const partitions = new Set<string>();
  for (const line of worker.lines) {
    const list = (line.partitions as string[] | undefined) ?? [];
    if (line.msg === 'assigned') for (const p of list) partitions.add(p);
    if (line.msg === 'revoking' || line.msg === 'partitions lost') for (const p of list) partitions.delete(p);
  }
  return partitions;
}

/** APPLIED outcomes `worker` logged after its last rebalance line (assigned, revoking, revoked). */
function appliedSinceRebalance(worker: Worker): number {
  let applied = 0;
  for (let i = worker.lines.length - 1; i >= 0; i--) {
    const line = worker.lines[i]!;
    if (line.msg === 'assigned' || line.msg === 'revoking' || line.msg === 'revoked') break;
    if (line.outcome === 'APPLIED') applied += 1;
  }
  return applied;
}

/** Effects `worker` applied so far, per partition (`topic/partition`). */
function appliedPerPartition(worker: Worker): Map<string, number> {
  const counts = new Map<string, number>();
  for (const l of worker.outcomes('APPLIED')) counts.set(`${l.topic}/${l.partition}`, (counts.get(`${l.topic}/${l.partition}`) ?? 0) + 1);
  return counts;
}

/** Holds once `worker` has applied an effect on each of `partitions` since this call: it runs them. */
function runsEachOf(worker: Worker, partitions: ReadonlySet<string>): () => boolean {
  const before = appliedPerPartition(worker);
  return () => {
    const now = appliedPerPartition(worker);
    return [...partitions].every((p) => (now.get(p) ?? 0) > (before.get(p) ?? 0));
  };
}

describe('a rolling upgrade from the code before stored-format versions, on Kafka', () => {
  it('applies every dispute once and in per-account order while old workers are replaced one by one by workers of this code', async () => {
    const { prefix, group, stateDir } = await scenario('upgrade');
    const source = `${prefix}disputes`;
    const accounts = disputes(ACCOUNTS, ACCOUNTS).map((d) => d.account);
    expect(new Set(accounts.map((a) => partitionForKey(a, PARTITIONS))).size, 'every partition has accounts, so every partition gets work').toBe(PARTITIONS);
    await createTopic(bootstrap, source, PARTITIONS);
    const dirs = { a: join(stateDir, 'a'), b: join(stateDir, 'b') };
    // One call at a time per partition, 250 ms each: about 24 disputes a second, whoever runs them.
    const env = { ORDERLY_MODEL_LATENCY_MS: '250', ORDERLY_MAX_IN_FLIGHT: '1' };
    const all: Worker[] = [];
    const start = (dir: 'a' | 'b', build: 'old' | 'new', args: readonly string[] = []) => {
      const worker = new Worker({ bootstrap, group, stateDir: dirs[dir], topicPrefix: prefix, env, args, ...(build === 'old' ? { root: oldBuild } : {}) });
      workers.push(worker);
      all.push(worker);
      return worker;
    };
    const finished = () => all.reduce((n, w) => n + w.outcomes('APPLIED').length + w.outcomes('DUPLICATE').length, 0);

    // The disputes written so far; more are written whenever fewer than BACKLOG wait.
    const inputs: Dispute[] = [];
    const feed = async () => {
      if (inputs.length - finished() >= BACKLOG) return;
      const batch = disputes(inputs.length + BATCH, ACCOUNTS).slice(inputs.length);
      await produce(bootstrap, source, batch.map(asInput));
      inputs.push(...batch);
    };
    /** Writes disputes until `done` holds; fails when `worker` exits first, or after 90 s. */
    const feedUntil = async (worker: Worker, what: string, done: () => boolean) => {
      const deadline = Date.now() + 90_000;
      while (!done()) {
        if (!worker.running) throw new Error(`worker exited before ${what}\n${worker.tail()}`);
        if (Date.now() > deadline) throw new Error(`no ${what} within 90 s\n${worker.tail()}`);
        await feed();
        await sleep(100);
      }
    };
    const applied = (w: Worker) => w.outcomes('APPLIED').length;

    // The old A commits only when a partition leaves it: when it is killed, every effect it applied
    // since on the partitions it holds is uncommitted, and comes back to new workers. (Commits fall on
    // the boundaries of their interval since the epoch: with the longest a timer allows, 2^31 - 1 ms,
    // the next one is days away, where an hour would fall inside a run at each full hour.)
    const oldA = start('a', 'old', ['--commit-every-ms', String(2 ** 31 - 1)]);
    const oldB = start('b', 'old');
    await feedUntil(oldB, 'effects applied by both old workers', () => applied(oldA) > 0 && applied(oldB) > 0);

    // B upgraded: its partitions go to the old A (old -> old), then some of them come to the new B (old -> new).
    const oldBs = owned(oldB);
    expect(await oldB.stop(), 'old B stops cleanly').toBe(0);
    await feedUntil(oldA, "old A running old B's partitions", runsEachOf(oldA, oldBs));
    // While an old worker is in the group, new ones record effects by effect id and write stored
    // format 2, which it reads (--no-effect-ring --stored-format 2: the first step of the upgrade, docs/state.md).
    const firstStep = ['--no-effect-ring', '--stored-format', '2'];
    const newB = start('b', 'new', firstStep);
    await feedUntil(newB, '10 effects applied by new B', () => applied(newB) >= 10);

    // The new B stops for a while: its partitions go back to the old A (new -> old).
    const newBs = owned(newB);
    expect(await newB.stop(), 'new B stops cleanly').toBe(0);
    await feedUntil(oldA, "old A running new B's partitions", runsEachOf(oldA, newBs));

    // B back (old -> new); then A upgraded, killed as a deploy kills a worker whose stop outlasts its
    // grace: after its session expires its partitions go to the new B (old -> new), which finds the
    // effects the old A applied and did not commit in their version-1 changelog records, and some of
    // them go on to the new A (new -> new), which opens the killed worker's directory.
    const newB2 = start('b', 'new', firstStep);
    await feedUntil(newB2, '10 effects applied by new B, started again', () => applied(newB2) >= 10);
    // What the kill must leave: effects old A applied since its last rebalance, which committed
    // everything it had finished (seen once in CI: none, when the kill came right after it).
    await feedUntil(oldA, 'effects applied by old A since its last rebalance', () => appliedSinceRebalance(oldA) >= 3);
    const oldAs = owned(oldA);
    await oldA.kill();
    await feedUntil(newB2, "new B running old A's partitions", runsEachOf(newB2, oldAs));
    // No old worker is left: the new A records in the rings and writes format 4 (the second step), beside the new B.
    const newA = start('a', 'new');
    await feedUntil(newA, '10 effects applied by new A', () => applied(newA) >= 10);

    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= inputs.length, {
      timeoutMs: 60_000,
      describe: (r) => `${decided(r)} of ${inputs.length} disputes decided\n${newA.stuck()}\n${newB2.stuck()}`,
    });
    expect(await newA.stop(), 'new A stops cleanly').toBe(0);
    expect(await newB2.stop(), 'new B stops cleanly').toBe(0);
    console.log(`rolling upgrade: ${inputs.length} disputes; applied by old A, old B, new B, new B again, new A: ${all.map(applied).join(', ')}`);

    for (const w of all) expect(rebalanceLines(w).lost, 'no partition lost by a worker that went on').toEqual([]);
    for (const w of [newB, newB2, newA]) {
      const restores = w.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('restored the state of'));
      expect(restores.length, 'partitions restored by a new worker').toBeGreaterThan(0);
    }
    const summary = await expectEachInputAppliedOnceInOrder(inputs, output, all, [dirs.a, dirs.b], group);
    // The killed old A's uncommitted effects came back to new workers, which found them applied.
    const byOldA = new Set(oldA.outcomes('APPLIED').map((l) => String(l.effectId)));
    const foundApplied = [newB2, newA].flatMap((w) => w.outcomes('DUPLICATE')).filter((l) => byOldA.has(String(l.effectId)));
    expect(foundApplied.length, "old A's effects redelivered to new workers and found applied").toBeGreaterThan(0);
    console.log(`rolling upgrade: ${summary.applied} applied, ${summary.duplicates} redelivered duplicates, ${summary.repeatedOutputs} repeated outputs`);

    // Both versions wrote the state that moved: records without a version (9afca58), of version 2
    // (the first step) and of version 4 (the new A), tombstones aside.
    const versions = new Map<string, number>();
    for (const r of await readAll(bootstrap, `${group}-dispute-decisions-changelog`)) {
      if (r.value === null) continue;
      const version = r.headers['orderly-format'] ?? (r.value.startsWith('v4:') ? '4' : 'none');
      versions.set(version, (versions.get(version) ?? 0) + 1);
    }
    console.log(`rolling upgrade: effects' changelog records by format version: ${JSON.stringify(Object.fromEntries(versions))}`);
    expect([...versions.keys()].sort(), 'format versions in the changelog').toEqual(['2', '4', 'none']);
  });
});
