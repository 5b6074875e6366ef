// A partition's state (effect records, parked keys, held events) follows it to another worker
// through its changelogs, and is rebuilt from them after an unclean stop; on the real broker.
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { EffectRecord } from '../../src/engine/outputs.js';
import type { ParkedKeyState } from '../../src/engine/parkedKeys.js';
import { openLevelStore } from '../../src/state/levelStore.js';
import { stateKeys } from '../../src/state/stateKeys.js';
import { partitionForKey } from '../../testkit/murmur2.js';
import type { Dispute } from '../../testkit/scenarios/disputes.js';
import { createTopic, produce, readAll, readUntil } from './kafkaClient.js';
import { asInput, checkDecisions, decided, disputeIdOf, disputes, scenario } from './disputes.js';
import { changelogWrites } from './robustness.js';
import { Worker, type LogLine, type WorkerOptions } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

const POISON = 12;
const POISON_ACCOUNT = 'acct-02';
// Commits so rare that none falls inside a test: a killed worker leaves every offset uncommitted.
// Commit times are multiples of the interval counted from the epoch: an hour would commit at every
// full hour (a run failed at 20:00 so); 2^31 - 1 ms falls once in 24.8 days.
const NEVER_COMMIT = ['--commit-every-ms', String(2 ** 31 - 1)];

function start(options: WorkerOptions): Worker {
  const worker = new Worker(options);
  workers.push(worker);
  return worker;
}

/** The worker's `restored the state of ...` lines: one per partition it took over. */
function restores(worker: Worker): LogLine[] {
  return worker.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('restored the state of'));
}

function idsOf(worker: Worker, outcome: string): string[] {
  return worker.outcomes(outcome).map((l) => String(l.effectId));
}

/** Effect ids found in more than one of these lists, or twice in one. */
function twice(...lists: string[][]): string[] {
  const all = lists.flat();
  return all.filter((id, i) => all.indexOf(id) !== i);
}

/** Disputes i of `inputs` that the poison holds: those of its account after it. */
const isHeld = (d: Dispute, i: number): boolean => d.account === POISON_ACCOUNT && i > POISON;

/** A changelog topic folded into the state it describes: each key's last value, tombstones removed. */
async function changelogState(topic: string): Promise<Map<string, unknown>> {
  const state = new Map<string, unknown>();
  for (const r of await readAll(bootstrap, topic)) {
    // A row's record of format 3 or 4 carries its events' effect records too.
    for (const op of changelogWrites(r)) {
      if (op.type === 'del') state.delete(op.key);
      else state.set(op.key, op.value);
    }
  }
  return state;
}

describe('state follows its partition on Kafka', () => {
  it('hands a parked key over cleanly A -> B -> A: B restores in full, A from its checkpoint, and the key stays held on each', async () => {
    const { prefix, group, stateDir } = await scenario('handover');
    const stateDirB = join(dirname(stateDir), 'state-b');
    const topic = `${prefix}disputes`;
    await createTopic(bootstrap, topic, 2);
    const inputs = disputes(90, 5, (i) => (i === POISON ? 'unparseable' : 'not-received'));
    const phases = [inputs.slice(0, 40), inputs.slice(40, 65), inputs.slice(65)];
    const heldIn = phases.map((phase) => phase.filter((d) => isHeld(d, inputs.indexOf(d))).length);
    const appliedIn = phases.map((phase, p) => phase.length - heldIn[p]! - (p === 0 ? 1 : 0));
    const options: WorkerOptions = { bootstrap, group, stateDir, topicPrefix: prefix };

    // A decides phase 1, parks the poison and holds its account; a clean stop commits and checkpoints.
    await produce(bootstrap, topic, phases[0]!.map(asInput));
    const a = start(options);
    await a.waitFor('phase 1 done', () => a.outcomes('APPLIED').length === appliedIn[0] && a.outcomes('HELD').length === heldIn[0]);
    expect(a.outcomes('PARKED')).toHaveLength(1);
    expect(await a.stop()).toBe(0);

    // B, with a state directory of its own, has only the changelogs to know the key is parked.
    await produce(bootstrap, topic, phases[1]!.map(asInput));
    const b = start({ ...options, stateDir: stateDirB });
    await b.waitFor('phase 2 done', () => b.outcomes('APPLIED').length === appliedIn[1] && b.outcomes('HELD').length === heldIn[1]);
    expect(restores(b).map((l) => l.mode)).toEqual(['full', 'full']);
    expect(
      restores(b).reduce((n, l) => n + Number(l.records), 0),
      'B read the changelogs A wrote',
    ).toBeGreaterThan(0);
    expect(b.outcomes('PARKED'), 'the poison is not run again: its offset was committed').toHaveLength(0);
    expect(b.outcomes('DUPLICATE')).toHaveLength(0);
    expect(await b.stop()).toBe(0);

    // A comes back to its own directory: its checkpoint says its state is complete up to its own
    // writes, so it reads only what B wrote, and holds the key at the sequence B left it.
    await produce(bootstrap, topic, phases[2]!.map(asInput));
    const a2 = start(options);
    await a2.waitFor('phase 3 done', () => a2.outcomes('APPLIED').length === appliedIn[2] && a2.outcomes('HELD').length === heldIn[2]);
    const back = restores(a2);
    expect(back.map((l) => l.mode)).toEqual(['checkpoint', 'checkpoint']);
    expect(back.every((l) => l.wiped === 0)).toBe(true);
    const readBack = back.reduce((n, l) => n + Number(l.records), 0);
    expect(readBack, "A read B's writes").toBeGreaterThan(0);
    const changelogs = ['decide-attempts', 'decide-park', 'dispute-decisions'].map((store) => `${group}-${store}-changelog`);
    const onChangelogs = (await Promise.all(changelogs.map((t) => readAll(bootstrap, t)))).reduce((n, records) => n + records.length, 0);
    expect(readBack, 'A read only what followed its checkpoint, not its own writes again').toBeLessThan(onChangelogs);
    expect(await a2.stop()).toBe(0);
    const summary = (w: Worker) =>
      restores(w)
        .map((l) => `${l.mode} ${l.records} records ${l.tookMs} ms`)
        .join(', ');
    console.log(`hand-over test: B restored ${summary(b)}; A came back with ${summary(a2)} (${onChangelogs} on the changelogs)`);

    expect(twice(idsOf(a, 'APPLIED'), idsOf(b, 'APPLIED'), idsOf(a2, 'APPLIED')), 'effects applied twice').toEqual([]);
    const expected = inputs.filter((d, i) => i !== POISON && !isHeld(d, i));
    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= expected.length, {
      timeoutMs: 60_000,
      describe: (r) => `${decided(r)} of ${expected.length} decided`,
    });
    expect(checkDecisions(expected, output)).toEqual([]);
    const decidedIds = new Set(output.map(disputeIdOf));
    for (const [i, d] of inputs.entries()) if (i === POISON || isHeld(d, i)) expect(decidedIds.has(d.disputeId), `${d.disputeId} is held`).toBe(false);

    // The park store's changelog says what each worker's LevelDB says: one parked key, every held event.
    const heldTotal = heldIn.reduce((n, h) => n + h, 0);
    const park = await changelogState(`${group}-decide-park-changelog`);
    const parkedKeys = [...park.entries()].filter(([k]) => k.startsWith('parked/'));
    expect(parkedKeys).toHaveLength(1);
    const [parkedKey, state] = parkedKeys[0]! as [string, ParkedKeyState];
    expect(state).toMatchObject({ lane: POISON_ACCOUNT, status: 'parked', headSeq: 0, nextSeq: 1 + heldTotal });
    expect([...park.keys()].filter((k) => k.startsWith('held/'))).toHaveLength(1 + heldTotal);
    const local = await openLevelStore(stateDir);
    try {
      expect(local.get(parkedKey)).toEqual(state);
    } finally {
      await local.close();
    }

    // Effect records with ids derived from offsets live in their partitions' rings (docs/guarantees.md,
    // "How long effect records are kept"): written over once committed past, never deleted. 90
    // events stay far below a ring's size, so the changelog holds each applied event's record.
    const effects = await readAll(bootstrap, `${group}-dispute-decisions-changelog`);
    expect(
      effects.filter((r) => r.value === null && r.key!.startsWith('ring/')),
      'ring records are never tombstoned',
    ).toEqual([]);
    const folded = await changelogState(`${group}-dispute-decisions-changelog`);
    expect([...folded.keys()].filter((k) => k.startsWith('ring/')).length, 'one ring record per applied event').toBe(expected.length);
    expect(
      [...folded.keys()].filter((k) => k.startsWith('effect/')),
      'no record under an effect id (no replay ran)',
    ).toEqual([]);
  });

  it('moves a partition from a running worker to one that joins: checkpointed at revocation, restored before its first record', async () => {
    const { prefix, group, stateDir } = await scenario('rebalance');
    const topic = `${prefix}disputes`;
    await createTopic(bootstrap, topic, 2);
    const accounts = 6;
    const all = disputes(90, accounts);
    // One poisoned account on each partition: whichever partition moves, its new owner must hold one.
    const poisonOf = [0, 1].map((p) => all.find((d) => partitionForKey(d.account, 2) === p)!.account);
    const poisonIndex = poisonOf.map((account) => all.findIndex((d) => d.account === account));
    const inputs = all.map((d, i) => (poisonIndex.includes(i) ? { ...d, reason: 'unparseable' } : d));
    const heldBehind = (d: Dispute, i: number) => poisonOf.includes(d.account) && !poisonIndex.includes(i);
    const [first, second] = [inputs.slice(0, 60), inputs.slice(60)];
    const heldFirst = first.filter(heldBehind).length;
    const options: WorkerOptions = { bootstrap, group, stateDir, topicPrefix: prefix };

    await produce(bootstrap, topic, first.map(asInput));
    const a = start(options);
    await a.waitFor('first inputs done', () => a.outcomes('APPLIED').length === first.length - 2 - heldFirst && a.outcomes('HELD').length === heldFirst);
    expect(a.outcomes('PARKED')).toHaveLength(2);

    const b = start({ ...options, stateDir: join(dirname(stateDir), 'state-b') });
    await b.waitFor('a partition taken over', () => restores(b).length > 0);
    const [moved] = restores(b);
    const movedId = `${topic}/${moved!.partition}`;
    expect(moved).toMatchObject({ mode: 'full' });
    expect(Number(moved!.records), "B read A's writes of the partition").toBeGreaterThan(0);
    const revoked = a.lines.filter((l) => l.msg === 'revoked').flatMap((l) => l.partitions as string[]);
    expect(revoked).toEqual([movedId]);
    expect(
      a.lines.some((l) => l.msg === 'checkpoint written' && l.partition === movedId),
      'A checkpointed the partition it handed over',
    ).toBe(true);

    await produce(bootstrap, topic, second.map(asInput));
    const heldSecond = second.filter((d) => poisonOf.includes(d.account)).length;
    const appliedSecond = second.length - heldSecond;
    const count = (outcome: string) => a.outcomes(outcome).length + b.outcomes(outcome).length;
    await b.waitFor('second inputs done', () => count('APPLIED') === first.length - 2 - heldFirst + appliedSecond && count('HELD') === heldFirst + heldSecond);
    // B holds the new events of the poisoned account of the partition it took, which only the
    // changelog told it was parked.
    const movedPoison = poisonOf[Number(moved!.partition)]!;
    expect(b.outcomes('HELD').map((l) => l.key)).toEqual(second.filter((d) => d.account === movedPoison).map((d) => d.account));
    expect(b.outcomes('PARKED')).toHaveLength(0);
    expect(b.outcomes().every((l) => l.partition === moved!.partition)).toBe(true);
    expect(twice(idsOf(a, 'APPLIED'), idsOf(b, 'APPLIED')), 'effects applied twice').toEqual([]);
    expect(await b.stop()).toBe(0);
    expect(await a.stop()).toBe(0);
    const output = await readAll(bootstrap, `${prefix}dispute-decisions`);
    expect(
      checkDecisions(
        inputs.filter((d, i) => !poisonIndex.includes(i) && !heldBehind(d, i)),
        output,
      ),
    ).toEqual([]);
  });

  it('after a kill -9, another worker with its own state directory finds every applied effect and keeps the key held', async () => {
    const { prefix, group, stateDir } = await scenario('takeover');
    const topic = `${prefix}disputes`;
    await createTopic(bootstrap, topic, 2);
    const inputs = disputes(60, 5, (i) => (i === POISON ? 'unparseable' : 'not-received'));
    const later = disputes(75, 5).slice(60);
    const held = inputs.filter(isHeld).length;
    const options: WorkerOptions = { bootstrap, group, stateDir, topicPrefix: prefix, args: NEVER_COMMIT };

    await produce(bootstrap, topic, inputs.map(asInput));
    const a = start(options);
    await a.waitFor('all applied, parked or held', () => a.outcomes('APPLIED').length === inputs.length - 1 - held && a.outcomes('HELD').length === held);
    await a.kill();

    // Nothing was committed: B gets every event again, and more of the held account.
    await produce(bootstrap, topic, later.map(asInput));
    const laterHeld = later.filter((d) => d.account === POISON_ACCOUNT).length;
    const b = start({ ...options, stateDir: join(dirname(stateDir), 'state-b') });
    await b.waitFor(
      'all found applied or applied',
      () => b.outcomes('DUPLICATE').length + b.outcomes('APPLIED').length === inputs.length - 1 - held + later.length - laterHeld,
    );
    await b.waitFor('the held account still held', () => b.outcomes('HELD').length === held + laterHeld);
    expect(restores(b).map((l) => l.mode)).toEqual(['full', 'full']);

    expect(twice(idsOf(a, 'APPLIED'), idsOf(b, 'APPLIED')), 'effects applied twice').toEqual([]);
    expect(new Set(idsOf(b, 'DUPLICATE')), 'every effect A applied is found by B').toEqual(new Set(idsOf(a, 'APPLIED')));
    expect(b.outcomes('APPLIED')).toHaveLength(later.length - laterHeld);
    // The redelivered poison is found parked (no model call), its park record sent again.
    expect(b.outcomes('PARKED').map((l) => l.effectId)).toEqual(a.outcomes('PARKED').map((l) => l.effectId));
    expect(await b.stop()).toBe(0);
    const all = await readAll(bootstrap, `${prefix}dispute-decisions`);
    const decidedIds = new Set(all.map(disputeIdOf));
    for (const [i, d] of inputs.entries()) if (i === POISON || isHeld(d, i)) expect(decidedIds.has(d.disputeId), `${d.disputeId} is held`).toBe(false);
  });

  it('after a kill -9, a restart on the same directory wipes the partition and rebuilds it from the changelog', async () => {
    const { prefix, group, stateDir } = await scenario('rebuild');
    const topic = `${prefix}disputes`;
    await createTopic(bootstrap, topic, 1);
    const inputs = disputes(31, 4);
    const options: WorkerOptions = { bootstrap, group, stateDir, topicPrefix: prefix, args: NEVER_COMMIT };

    await produce(bootstrap, topic, inputs.slice(0, 30).map(asInput));
    const a = start(options);
    await a.waitFor('30 applied', () => a.outcomes('APPLIED').length === 30);
    await a.kill();
    expect(restores(a)).toMatchObject([{ mode: 'full', records: 0 }]);

    // Make the local state disagree with the changelog both ways: an effect it lacks, and one
    // it has that the changelog never got (a write a kill cut off before its changelog write).
    const tp = { topic, partition: 0 };
    const lost = stateKeys.ring('dispute-decisions', tp, 7);
    const ahead = stateKeys.ring('dispute-decisions', tp, 30);
    const local = await openLevelStore(stateDir);
    try {
      expect(local.get(lost)).toBeDefined();
      await local.batch([
        { type: 'del', key: lost },
        { type: 'put', key: ahead, value: { effectId: `${topic}/0/30`, topic, partition: 0, offset: 30, key: 'x', appliedAtMs: 1, outputs: [] } },
      ]);
    } finally {
      await local.close();
    }

    await produce(bootstrap, topic, inputs.slice(30).map(asInput));
    const a2 = start(options);
    await a2.waitFor('31 found applied or applied', () => a2.outcomes('DUPLICATE').length + a2.outcomes('APPLIED').length === 31);
    const [restore] = restores(a2);
    expect(restore).toMatchObject({ mode: 'full', reason: expect.stringMatching(/no checkpoint/) });
    expect(Number(restore!.wiped), 'the local keys of the partition were wiped').toBeGreaterThanOrEqual(60);
    // At least one record per event: its row's, carrying its effect record or beside it.
    expect(Number(restore!.records), 'and read back from the changelogs').toBeGreaterThanOrEqual(30);
    console.log(`rebuild test: wiped ${restore!.wiped} local keys, read ${restore!.records} changelog records in ${restore!.tookMs} ms`);
    // The effect the local state lacked came back from the changelog: found, not applied again...
    expect(idsOf(a2, 'DUPLICATE')).toContain(`${topic}/0/7`);
    // ...and the one only the local state had is gone: the event behind it is applied for real.
    expect(idsOf(a2, 'APPLIED')).toEqual([`${topic}/0/30`]);
    expect(twice(idsOf(a, 'APPLIED'), idsOf(a2, 'APPLIED'))).toEqual([]);
    expect(await a2.stop()).toBe(0);

    const after = await openLevelStore(stateDir);
    try {
      expect(after.get<EffectRecord>(lost)?.effectId).toBe(`${topic}/0/7`);
      expect(after.get<EffectRecord>(ahead)?.key).toBe(inputs[30]!.account);
      expect(await after.entries(stateKeys.ringPrefix('dispute-decisions'))).toHaveLength(31);
    } finally {
      await after.close();
    }
  });
});
