// State written by orderly before stored formats had versions (commit 9afca58), restored by this
// code: a LevelDB directory and the changelog records of the same state, both checked in under
// test/fixtures/stored-v1 (make.ts there wrote them, scenario.ts holds the events and the model).
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { stream } from '../../src/dsl/stream.js';
import { fromChangelogRecord } from '../../src/kafka/changelog/changelogRecords.js';
import { openLevelStore } from '../../src/state/levelStore.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { applyDecision, Decision } from '../../testkit/scenarios/disputes.js';
import { decideDispute, disputes, type FixtureDispute } from '../fixtures/stored-v1/scenario.js';

const fixture = fileURLToPath(new URL('../fixtures/stored-v1/', import.meta.url));

interface FixtureRecord {
  readonly key: string;
  readonly value: string | null;
  readonly headers: Record<string, string> | null;
}

/** The fixture's LevelDB directory, copied (opening a LevelDB writes to it). */
async function fromLevelDb(dir: string): Promise<void> {
  await cp(join(fixture, 'state'), dir, { recursive: true });
}

/** An empty LevelDB filled from the fixture's changelog records, as a take-over restores them. */
async function fromChangelog(dir: string): Promise<void> {
  const records = JSON.parse(await readFile(join(fixture, 'changelog.json'), 'utf8')) as FixtureRecord[];
  const store = await openLevelStore(dir);
  const toBytes = (value: string | null) => (value === null ? null : new TextEncoder().encode(value));
  await store.batch(records.map((r) => fromChangelogRecord({ key: r.key, value: toBytes(r.value), headers: r.headers ?? undefined })));
  await store.close();
}

let dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  dirs = [];
});

describe.each([
  ['its LevelDB directory', fromLevelDb],
  ['its changelog records', fromChangelog],
])('state of orderly before stored-format versions, restored from %s', (_, restore) => {
  it('finds the finished effects (DUPLICATE), keeps the parked key parked and resolvable, and keeps the attempts counted', async () => {
    const root = await mkdtemp(join(tmpdir(), 'orderly-stored-v1-'));
    dirs.push(root);
    const stateDir = join(root, 'state');
    await restore(stateDir);

    const calls: string[] = [];
    const topology = stream<FixtureDispute>('disputes')
      .keyedSerial({ maxInFlight: 4 })
      .agentStep('decide', decideDispute(calls), { schema: Decision })
      .park({ attempts: 3, retryDelayMs: 1_000 })
      .applyOnce(applyDecision)
      .to('dispute-decisions')
      .build();
    // The state is the fixture's on purpose: the driver is told so (a used stateDir is refused otherwise).
    const driver = new TopologyTestDriver(topology, { stateDir, reuseStateDir: true, seed: 1 });
    try {
      // The same five events at the same offsets, none committed: the old worker crashed.
      const input = driver.createInputTopic('disputes');
      for (const d of disputes) input.pipeInput(d.account, d);
      await driver.advanceWallClockTime(10_000);

      const outcomesOf = (offset: number) =>
        driver
          .history()
          .filter((o) => o.offset === offset)
          .map((o) => o.outcome);
      expect(outcomesOf(0)).toEqual(['DUPLICATE']);
      expect(outcomesOf(1)).toEqual(['DUPLICATE']);
      // A DUPLICATE sends the outputs its effect record stored, without deciding again.
      const decisions = driver.createOutputTopic('dispute-decisions');
      expect(decisions.readValuesToList()).toEqual([
        { disputeId: 'd1', account: 'acct-A', action: 'refund', rationale: 'refund d1' },
        { disputeId: 'd2', account: 'acct-A', action: 'refund', rationale: 'refund d2' },
      ]);
      // acct-C had one failed attempt: two more make three, then it parks.
      expect(calls).toEqual(['d5', 'd5']);
      expect(driver.modelCalls().map((c) => c.attempt)).toEqual([2, 3]);
      expect(
        driver
          .parked()
          .map((p) => p.key)
          .sort(),
      ).toEqual(['acct-B', 'acct-C']);
      expect(driver.parkedHead(0, 'acct-B').event.effectId).toBe('disputes/0/2');

      await driver.resolve(0, 'acct-B', { decision: { action: 'reject', rationale: 'resolved by hand' } });
      await driver.advanceWallClockTime(1_000);
      expect(driver.parked().map((p) => p.key)).toEqual(['acct-C']);
      expect(decisions.readValuesToList()).toEqual([
        expect.objectContaining({ disputeId: 'd3', action: 'reject' }),
        expect.objectContaining({ disputeId: 'd4', action: 'refund' }),
      ]);
      expect(calls).toEqual(['d5', 'd5', 'd4']);
    } finally {
      await driver.close();
    }
  });
});
