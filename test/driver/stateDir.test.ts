// A driver's stateDir: its own crash() and restart() reopen it, a new driver refuses one that holds
// state (its in-memory log starts at offset 0 again, so the stored effect records would take every
// event for a DUPLICATE), unless told that the state is there on purpose.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { fakeModel } from '../../testkit/fakeModel.js';
import { decisionTopology, outcomesAt, type Ev } from './helpers.js';

let root: string;
const drivers: TopologyTestDriver[] = [];
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'orderly-state-dir-'));
});
afterEach(async () => {
  for (const d of drivers.splice(0)) await d.close();
  await rm(root, { recursive: true, force: true });
});

/** A driver over `stateDir` whose model counts its calls; two events of one key piped. */
function driverOn(stateDir: string, options: { reuseStateDir?: boolean } = {}) {
  const model = fakeModel<Ev, unknown>({ latencyMs: 100, decide: () => ({ action: 'refund' }) });
  const d = new TopologyTestDriver(decisionTopology(model.decide), { stateDir, ...options });
  drivers.push(d);
  const input = d.createInputTopic<Ev>('events');
  input.pipeInput('k', { id: 'e1' });
  input.pipeInput('k', { id: 'e2' });
  return { d, model };
}

describe('stateDir', () => {
  it('a new driver refuses a directory an earlier driver used, naming the directory, the cause and the fix', async () => {
    const stateDir = join(root, 'state');
    const first = driverOn(stateDir);
    await first.d.runUntilIdle();
    expect(first.model.stats().calls).toHaveLength(2);
    await first.d.close();

    expect(() => driverOn(stateDir)).toThrow(
      `TopologyTestDriver: stateDir '${stateDir}' is not empty: it holds the state of an earlier driver or run, ` +
        "and this driver's in-memory log starts at offset 0 again, so the effect records stored there would mark every event a DUPLICATE " +
        '(its model never called, its effects never applied); pass an empty or new directory (mkdtemp, say), or omit stateDir for a temporary in-memory state ' +
        "(a driver's own crash() and restart() keep its directory; reuseStateDir: true reads state left there on purpose)",
    );
  });

  it("keeps its own directory across crash() and restart(): the restarted engine finds the records of the crashed one's effects", async () => {
    const stateDir = join(root, 'state');
    const { d, model } = driverOn(stateDir);
    d.crash({ point: 'recorded-not-committed', nth: 2 });
    await d.runUntilIdle();
    d.restart();
    await d.runUntilIdle();
    expect(outcomesAt(d, 0, 1)).toEqual(['DUPLICATE']);
    expect(model.stats().calls).toHaveLength(2);
    expect(d.metrics().doubleEffects).toBe(0);
  });

  it('refuses a stateDir that is a file, or lies under one, saying so', async () => {
    const file = join(root, 'state.txt');
    await writeFile(file, 'not a directory');
    for (const stateDir of [file, join(file, 'state')])
      expect(() => driverOn(stateDir)).toThrow(
        `TopologyTestDriver: stateDir '${stateDir}' is a file (or lies under one), not a directory; pass a directory, new or empty`,
      );
  });

  it('takes a directory that does not exist yet, or an empty one', async () => {
    const empty = join(root, 'empty');
    await mkdir(empty);
    for (const stateDir of [join(root, 'new'), empty]) {
      const { d, model } = driverOn(stateDir);
      await d.runUntilIdle();
      expect(outcomesAt(d, 0, 0)).toEqual(['APPLIED']);
      expect(model.stats().calls).toHaveLength(2);
    }
  });

  it('with reuseStateDir: true, opens the state as it is: the events at the stored offsets are found applied', async () => {
    const stateDir = join(root, 'state');
    const first = driverOn(stateDir);
    await first.d.runUntilIdle();
    await first.d.close();

    const second = driverOn(stateDir, { reuseStateDir: true });
    await second.d.runUntilIdle();
    expect(outcomesAt(second.d, 0, 0)).toEqual(['DUPLICATE']);
    expect(second.model.stats().calls).toHaveLength(0);
  });
});
