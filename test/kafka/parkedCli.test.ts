// Issue 3 §8(c): a poison event parked with the later events of its key held, resolved with
// `./bin/orderly parked`, replayed in order; and the worker's side of the resolutions topic.
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { controlRecord, resolutionsTopic, type ResolutionRequest } from '../../src/kafka/parked/resolutionRecords.js';
import type { ParkedKeySummary } from '../../src/cli/parkedFormat.js';
import { asInput, checkDecisions, decided, disputeIdOf, disputes, parkedDisputeId, scenario } from './disputes.js';
import { createTopic, produce, readAll, readUntil, type ReadRecord } from './kafkaClient.js';
import { DISPUTES_MODULE, REPO, Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

async function start(name: string) {
  const { prefix, group, stateDir } = await scenario(name);
  await createTopic(bootstrap, `${prefix}disputes`, 2);
  const worker = new Worker({ bootstrap, group, stateDir, topicPrefix: prefix });
  workers.push(worker);
  return { prefix, group, stateDir, worker };
}

interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `./bin/orderly parked ARGS` as a child process, against this test's topology and group. */
function parkedCli(prefix: string, group: string, args: readonly string[], scope: readonly string[] = ['--topology', DISPUTES_MODULE]): Promise<CliResult> {
  const argv = ['bin/orderly', 'parked', ...args, '--bootstrap', bootstrap, '--group', group, ...scope, '--timeout-ms', '60000'];
  return new Promise((resolve) =>
    execFile(process.execPath, argv, { cwd: REPO, env: { ...process.env, ORDERLY_TOPIC_PREFIX: prefix } }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** Poison at inputs 12 (acct-02) and 13 (acct-03); every later event of theirs is held. */
function poisonInputs() {
  const inputs = disputes(40, 5, (i) => (i === 12 || i === 13 ? 'unparseable' : 'not-received'));
  const poisonA = inputs[12]!;
  const poisonB = inputs[13]!;
  const heldA = inputs.slice(13).filter((d) => d.account === poisonA.account);
  const heldB = inputs.slice(14).filter((d) => d.account === poisonB.account);
  const free = inputs.filter((d) => d !== poisonA && d !== poisonB && !heldA.includes(d) && !heldB.includes(d));
  return { inputs, poisonA, poisonB, heldA, heldB, free };
}

/** The park records once `count` disputes have one (held events' too), and `disputeId` among them if given. */
async function waitParked(prefix: string, worker: Worker, count: number, disputeId?: string): Promise<ReadRecord[]> {
  const enough = (ids: Set<unknown>) => ids.size >= count && (disputeId === undefined || ids.has(disputeId));
  return readUntil(bootstrap, `${prefix}disputes.parked`, (r) => enough(new Set(r.map(parkedDisputeId))), {
    timeoutMs: 90_000,
    describe: (r) => `${r.length} park records\n${worker.stuck()}`,
  });
}

describe('orderly parked: list, show, resolve and replay against a running worker', () => {
  it('parks a poison with its key held, lists and shows it, and replays the key in order after resolve --decision and --discard', async () => {
    const { prefix, group, worker } = await start('parked-cli');
    const { inputs, poisonA, poisonB, heldA, heldB, free } = poisonInputs();
    await produce(bootstrap, `${prefix}disputes`, inputs.map(asInput));

    // Parked, the later events of both keys held, the other keys go on.
    await waitParked(prefix, worker, 2 + heldA.length + heldB.length);
    const early = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= free.length, {
      timeoutMs: 90_000,
      describe: (r) => `${decided(r)} of ${free.length} decided\n${worker.stuck()}`,
    });
    expect(checkDecisions(free, early)).toEqual([]);

    // list: both keys, with their head and held counts (the changelog may trail the park records a moment).
    let listed: ParkedKeySummary[] = [];
    for (let i = 0; i < 30; i += 1) {
      const list = await parkedCli(prefix, group, ['list', '--json']);
      expect(list.stderr).toBe('');
      expect(list.code).toBe(0);
      listed = JSON.parse(list.stdout) as ParkedKeySummary[];
      if (listed.length === 2 && listed.every((k) => k.held === (k.key === poisonA.account ? heldA : heldB).length)) break;
      await sleep(500);
    }
    const a = listed.find((k) => k.key === poisonA.account)!;
    const b = listed.find((k) => k.key === poisonB.account)!;
    expect(a).toMatchObject({ status: 'parked', held: heldA.length, head: { attempts: 3, lastError: expect.stringMatching(/failed its schema/) } });
    expect(b).toMatchObject({ status: 'parked', held: heldB.length });
    const text = await parkedCli(prefix, group, ['list']);
    expect(text.stdout).toMatch(new RegExp(`${a.partition}\\s+${poisonA.account}\\s+parked\\s+${a.head!.offset}`));
    expect(text.stdout).toMatch(/2 parked keys/);

    // show: the head with its attempts and errors, then the held events in order.
    const show = await parkedCli(prefix, group, ['show', String(a.partition), poisonA.account]);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/parked after 3 attempts/);
    expect(show.stdout.match(/attempt \d at /g)).toHaveLength(3);
    const shownIds = [...show.stdout.matchAll(/"disputeId":"(d-\d+)"/g)].map((m) => m[1]);
    expect(shownIds).toEqual([poisonA, ...heldA].map((d) => d.disputeId));

    // replay (a retry): the stand-in model fails this event again, so the key is parked again.
    const retry = await parkedCli(prefix, group, ['replay', String(a.partition), poisonA.account]);
    expect(retry.stdout).toMatch(/^parked again: key 'acct-02'/);
    expect(retry.code).toBe(3);

    // A decision that fails the step's schema is refused by the engine; the key stays parked.
    const bad = await parkedCli(prefix, group, ['resolve', String(a.partition), poisonA.account, '--decision', '{"action":"maybe"}']);
    expect(bad.stdout).toMatch(/^refused: .*decision failed its schema/);
    expect(bad.code).toBe(2);

    // A person's decision: the poison gets it, the held events replay, in order, and the key is released.
    const decision = { action: 'escalate', rationale: 'decided by a person' };
    const resolved = await parkedCli(prefix, group, ['resolve', String(a.partition), poisonA.account, '--decision', JSON.stringify(decision)]);
    expect(resolved.stdout).toBe(
      `released: key '${poisonA.account}' of ${prefix}disputes/${a.partition} (decision ${JSON.stringify(decision)} for ${a.head!.effectId}); the parked event given the person's decision, then ${heldA.length} held event${heldA.length === 1 ? '' : 's'} replayed in order\n`,
    );
    expect(resolved.code).toBe(0);

    // Discard: the poison goes without an effect, the held events replay in order.
    const discarded = await parkedCli(prefix, group, ['resolve', String(b.partition), poisonB.account, '--discard']);
    expect(discarded.stdout).toMatch(/^released: key 'acct-03' .*; the parked event discarded, then \d+ held events? replayed in order\n$/);
    expect(discarded.code).toBe(0);

    const expected = inputs.filter((d) => d !== poisonB);
    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= expected.length, {
      timeoutMs: 90_000,
      describe: (r) => `${decided(r)} of ${expected.length} decided\n${worker.stuck()}`,
    });
    expect(checkDecisions(expected, output)).toEqual([]);
    const decidedA = output.find((r) => disputeIdOf(r) === poisonA.disputeId)!;
    expect(JSON.parse(decidedA.value!)).toMatchObject(decision);
    expect((await readAll(bootstrap, `${prefix}dispute-decisions`)).some((r) => disputeIdOf(r) === poisonB.disputeId)).toBe(false);
    expect(worker.outcomes('DISCARDED')).toHaveLength(1);

    // Nothing is parked any more; a resolution of a released key is refused before it is sent.
    const after = await parkedCli(prefix, group, ['list']);
    expect(after.stdout).toMatch(/^no parked keys on /);
    const again = await parkedCli(prefix, group, ['resolve', String(b.partition), poisonB.account, '--discard']);
    expect(again.stderr).toMatch(/key 'acct-03' of .* is not parked/);
    expect(again.code).toBe(1);
    expect(await worker.stop()).toBe(0);
  });

  it('keeps a resolution sent while no worker runs until the next owner has restored the partition, which then applies it', async () => {
    const { prefix, group, worker } = await start('parked-handover');
    const { inputs, poisonA, heldA } = poisonInputs();
    await produce(bootstrap, `${prefix}disputes`, inputs.map(asInput));
    await waitParked(prefix, worker, 2 + heldA.length);
    let a: ParkedKeySummary | undefined;
    for (let i = 0; i < 30 && a?.held !== heldA.length; i += 1) {
      if (i > 0) await sleep(500);
      a = (JSON.parse((await parkedCli(prefix, group, ['list', '--json'])).stdout) as ParkedKeySummary[]).find((k) => k.key === poisonA.account);
    }
    expect(a?.held).toBe(heldA.length);
    // The same without the module: the source topic and the park's name.
    const byName = await parkedCli(prefix, group, ['list', '--json'], ['--topic', `${prefix}disputes`, '--park', 'decide-park']);
    expect((JSON.parse(byName.stdout) as ParkedKeySummary[]).find((k) => k.key === poisonA.account)).toEqual(a);
    const noSuchPartition = await parkedCli(prefix, group, ['show', '7', poisonA.account]);
    expect(noSuchPartition.stderr).toMatch(/partition 7 does not exist: .*disputes has 2 \(0 to 1\)/);
    expect(noSuchPartition.code).toBe(1);
    expect(await worker.stop()).toBe(0);

    const decision = { action: 'refund', rationale: 'sent while no worker ran' };
    const sent = await parkedCli(prefix, group, ['resolve', String(a!.partition), poisonA.account, '--decision', JSON.stringify(decision), '--no-wait']);
    expect(sent.stdout).toMatch(/^sent: key 'acct-02'/);
    expect(sent.code).toBe(0);

    // Another worker, with a state directory of its own: it restores the partition from the changelog first.
    const { stateDir } = await scenario('parked-handover-b');
    const next = new Worker({ bootstrap, group, stateDir, topicPrefix: prefix });
    workers.push(next);
    const expected = inputs.filter((d) => d.account === poisonA.account);
    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r.filter((x) => x.key === poisonA.account)) >= expected.length, {
      timeoutMs: 90_000,
      describe: (r) => `${r.length} decisions\n${next.stuck()}`,
    });
    expect(
      checkDecisions(
        expected,
        output.filter((r) => r.key === poisonA.account),
      ),
    ).toEqual([]);
    expect(JSON.parse(output.find((r) => disputeIdOf(r) === poisonA.disputeId)!.value!)).toMatchObject(decision);
    const restored = next.lines.findIndex((l) => typeof l.msg === 'string' && l.msg.startsWith(`restored the state of ${prefix}disputes/${a!.partition} `));
    const applied = next.lines.findIndex((l) => l.msg === 'resolution applied: the key replays');
    expect(restored).toBeGreaterThanOrEqual(0);
    expect(applied).toBeGreaterThan(restored);
    expect(await next.stop()).toBe(0);
  });

  it("applies a request on <group>-resolutions once, on the key's owner, and answers each: refused, applied, stale", async () => {
    const { prefix, group, stateDir, worker } = await start('resolutions');
    const { inputs, poisonA, heldA } = poisonInputs();
    await produce(bootstrap, `${prefix}disputes`, inputs.map(asInput));
    // Its partitions start each as its state is back: either key's poison may park first.
    const parked = await waitParked(prefix, worker, 1, poisonA.disputeId);
    const poison = JSON.parse(parked.find((r) => parkedDisputeId(r) === poisonA.disputeId)!.value!) as {
      effectId: string;
      key: string;
      parkedAtMs: number;
      source: { topic: string; partition: number };
    };
    const target = {
      topic: poison.source.topic,
      partition: poison.source.partition,
      lane: poison.key,
      effectId: poison.effectId,
      parkedAtMs: poison.parkedAtMs,
    };
    const request = (id: string, resolution: ResolutionRequest['resolution']): ResolutionRequest => ({
      type: 'resolve',
      id,
      target,
      resolution,
      by: 'test',
      atMs: Date.now(),
    });
    const send = async (r: ResolutionRequest) => {
      const out = controlRecord(group, r);
      await produce(bootstrap, out.topic, [{ key: out.key, value: Buffer.from(out.value!), partition: 0 }]);
    };
    const outcomes = async (count: number) =>
      (
        await readUntil(bootstrap, resolutionsTopic(group), (r) => r.filter((x) => x.value?.includes('"outcome"')).length >= count, {
          timeoutMs: 60_000,
          describe: (r) => `${r.length} control records\n${worker.stuck()}`,
        })
      )
        .map((r) => JSON.parse(r.value!) as { type: string; id: string; status: string; message: string })
        .filter((r) => r.type === 'outcome');

    await send(request('bad', { decision: { action: 'maybe' } }));
    expect((await outcomes(1))[0]).toMatchObject({ id: 'bad', status: 'refused', message: expect.stringMatching(/failed its schema/) });
    await send(request('good', { decision: { action: 'reject', rationale: 'by hand' } }));
    expect((await outcomes(2))[1]).toMatchObject({ id: 'good', status: 'applied' });
    // The same parking resolved again: the key replays or is released by now, so it is stale.
    await send(request('late', { discard: true }));
    expect((await outcomes(3))[2]).toMatchObject({ id: 'late', status: 'stale' });

    const expected = inputs.filter((d) => d.account === poisonA.account);
    const output = await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => r.filter((x) => x.key === poisonA.account).length >= expected.length, {
      timeoutMs: 90_000,
      describe: (r) => `${r.length} decisions\n${worker.stuck()}`,
    });
    expect(
      checkDecisions(
        expected,
        output.filter((r) => r.key === poisonA.account),
      ),
    ).toEqual([]);
    expect(heldA.length).toBeGreaterThan(0);
    expect(await worker.stop()).toBe(0);

    // A restarted worker reads the whole topic again and answers nothing twice.
    const again = new Worker({ bootstrap, group, stateDir, topicPrefix: prefix });
    workers.push(again);
    await again.waitFor('its partitions', (lines) => lines.some((l) => l.msg === 'assigned'));
    await sleep(2_000);
    expect(again.lines.filter((l) => typeof l.resolution === 'string')).toEqual([]);
    expect((await readAll(bootstrap, resolutionsTopic(group))).filter((r) => r.value?.includes('"outcome"'))).toHaveLength(3);
    expect(await again.stop()).toBe(0);
  });
});
