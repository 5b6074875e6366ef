// crash() and restart() refuse what would never happen (a misspelt crash point, an nth below 1, a
// negative delay) at the call, rather than arming it silently.
import { afterEach, describe, expect, it } from 'vitest';
import { TopologyTestDriver } from '../../testkit/driver.js';
import type { CrashOptions } from '../../testkit/driver.js';
import { fakeModel } from '../../testkit/fakeModel.js';
import { decisionTopology, type Ev } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

function start(): TopologyTestDriver {
  const model = fakeModel<Ev, unknown>({ latencyMs: 100, decide: () => ({ action: 'refund' }) });
  driver = new TopologyTestDriver(decisionTopology(model.decide));
  driver.createInputTopic<Ev>('events').pipeInput('k', { id: 'e1' });
  return driver;
}

describe('crash() and restart() options', () => {
  it.each([
    [{ point: 'parkng' }, 'TopologyTestDriver.crash: no crash point "parkng" (did you mean \'parking\'?); the points are effect-applied-not-recorded,'],
    [{ point: 'parking', nth: 0 }, 'TopologyTestDriver.crash: nth must be a whole number of at least 1, got 0'],
    [{ nth: 2 }, 'TopologyTestDriver.crash: nth counts the times a point is reached; give it with point'],
    [{ at: Number.NaN }, 'TopologyTestDriver.crash: at must be a virtual time of 0 or more ms, got NaN'],
    [{ at: 100, point: 'parking' }, 'TopologyTestDriver.crash: give at or point, not both'],
    [{ pont: 'parking' }, "TopologyTestDriver.crash: unknown option 'pont' (did you mean 'point'?); its options are at, point, nth"],
  ])('crash(%j) is refused, naming the option and the fix', (options, message) => {
    const d = start();
    expect(() => d.crash(options as CrashOptions)).toThrow(message);
    expect(d.restartState().crashesPending).toBe(0);
  });

  it('refuses a crash point the driver never reaches, naming the mode or option that reaches it', () => {
    const d = start();
    expect(d.canCrashAt('parking')).toBe(true);
    expect(d.canCrashAt('transaction-open')).toBe(false);
    expect(() => d.crash({ point: 'transaction-open' })).toThrow(
      "TopologyTestDriver.crash: this driver never reaches the point 'transaction-open' (only in mode 'exactlyOnce'), so the crash would never come",
    );
    expect(() => d.crash({ point: 'landed-not-durable' })).toThrow("(only in mode 'staged' or 'exactlyOnce')");
    expect(() => d.crash({ point: 'restoring' })).toThrow('(only with the restoreMs option)');
    const eos = new TopologyTestDriver(decisionTopology(fakeModel<Ev, unknown>({ decide: () => ({ action: 'refund' }) }).decide), { mode: 'exactlyOnce' });
    expect(eos.canCrashAt('transaction-open')).toBe(true);
    void eos.close();
  });

  it('refuses an unknown driver option, naming the nearest', () => {
    const topology = decisionTopology(fakeModel<Ev, unknown>({ decide: () => ({ action: 'refund' }) }).decide);
    expect(() => new TopologyTestDriver(topology, { partition: 3 } as never)).toThrow(
      "TopologyTestDriver: unknown option 'partition' (did you mean 'partitions'?); its options are partitions, seed,",
    );
  });

  it('restart() refuses a negative delay; with a crash set for later, it restarts after it', async () => {
    const d = start();
    expect(() => d.restart({ after: -1 })).toThrow('TopologyTestDriver.restart: after must be 0 or more ms, got -1');
    d.crash({ at: 50 });
    d.restart({ after: 100 });
    await d.runUntilIdle();
    expect(d.restartState()).toMatchObject({ generation: 2, running: true, restartPending: false, crashesPending: 0 });
    expect(d.history().filter((h) => h.outcome === 'APPLIED')).toHaveLength(1);
  });
});
