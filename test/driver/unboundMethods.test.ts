// A method passed to the builder unbound (`.agentStep('d', scorer.decide)`): orderly calls every
// function it is given alone, so `this` is undefined and the method fails at once, with an error
// that names it, rather than reading and writing orderly's own node.
import { afterEach, describe, expect, it } from 'vitest';
import { effect } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { Decision, readParked, type Ev } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

class Scorer {
  calls = 0;
  decide(e: Ev): Decision {
    this.calls += 1;
    return { action: e.bad ? 'reject' : 'refund' };
  }
  keep(e: Ev): boolean {
    return this.calls >= 0 && !e.bad;
  }
}

describe('a method passed unbound', () => {
  it('fails as an attempt of its own, named by its error, and the instance and the topology are left as they were', async () => {
    const scorer = new Scorer();
    const built = stream<Ev>('events')
      .keyedSerial()
      .agentStep('decide', scorer.decide, { schema: Decision })
      .park({ attempts: 2, retryDelayMs: 100 })
      .applyOnce(effect('fx', (v: { event: Ev; decision: Decision }) => v.decision))
      .to('out')
      .build();
    driver = new TopologyTestDriver(built);
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
    await driver.runUntilIdle();

    const [parked, ...others] = readParked(driver);
    expect(others).toEqual([]);
    expect(parked!.body.errors.map((e) => e.error)).toEqual([expect.stringMatching(/reading 'calls'/), expect.stringMatching(/reading 'calls'/)]);
    expect(scorer.calls).toBe(0);
    expect(Object.keys(built.agentSteps[0]!)).not.toContain('calls');
  });

  it('as a filter or an effect too: each is called alone, and fails as that operator fails', async () => {
    const scorer = new Scorer();
    const counter = {
      applied: 0,
      apply(v: { event: Ev; decision: Decision }): Decision {
        this.applied += 1;
        return v.decision;
      },
    };
    const topology = (keep: (e: Ev) => boolean) =>
      stream<Ev>('events')
        .filter(keep)
        .keyedSerial()
        .agentStep('decide', (e: Ev): Decision => ({ action: e.bad ? 'reject' : 'refund' }), { schema: Decision })
        .park({ attempts: 1 })
        .applyOnce(effect('fx', counter.apply))
        .to('out')
        .build();
    const parkedErrors = async (keep: (e: Ev) => boolean): Promise<string[]> => {
      await driver?.close();
      driver = new TopologyTestDriver(topology(keep));
      driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
      await driver.runUntilIdle();
      return readParked(driver).flatMap((p) => p.body.errors.map((e) => `${p.body.step}: ${e.error}`));
    };

    expect(await parkedErrors(scorer.keep)).toEqual([expect.stringMatching(/reading 'calls'/)]);
    // With a filter that needs no `this`, the effect's `this.applied` fails its attempt.
    expect(await parkedErrors(() => true)).toEqual([expect.stringMatching(/applyOnce 'fx' threw: .*reading 'applied'/)]);
    expect(counter.applied).toBe(0);
  });
});
