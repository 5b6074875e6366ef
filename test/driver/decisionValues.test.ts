// A decision is kept as JSON (with a parked event, a durable run's journal, an effect record): a
// decide function that returns nothing, or a value JSON cannot hold, fails its attempt as an
// answer refused (poison: parked after its attempts), naming the step; other keys go on.
import { afterEach, describe, expect, it } from 'vitest';
import { effect } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { readParked } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

interface Claim {
  readonly id: string;
  readonly bad?: 'undefined' | 'bigint' | 'cycle' | 'function';
}

function decisionFor(claim: Claim): unknown {
  if (claim.bad === 'undefined') return undefined;
  if (claim.bad === 'bigint') return { payout: 10n };
  if (claim.bad === 'function') return () => 'pay';
  if (claim.bad === 'cycle') {
    const decision: Record<string, unknown> = { payout: 1 };
    decision.again = decision;
    return decision;
  }
  return { payout: 1 };
}

describe('decision values, with no schema', () => {
  it.each([
    ['undefined', "agentStep 'assess': its decision is undefined; return the decision (a JSON value), or throw to fail the attempt"],
    ['bigint', "agentStep 'assess': its decision cannot be stored as JSON: Do not know how to serialize a BigInt; return a JSON value"],
    ['cycle', "agentStep 'assess': its decision cannot be stored as JSON: Converting circular structure to JSON"],
    ['function', "agentStep 'assess': its decision (a function) has no JSON form; return a JSON value"],
  ] as const)('a decision that is %s parks its event, naming the step, and another key goes on', async (bad, message) => {
    const built = stream<Claim>('claims')
      .keyedSerial()
      .agentStep('assess', async (claim: Claim) => decisionFor(claim))
      .park({ attempts: 2, retryDelayMs: 100 })
      .applyOnce(effect('pay', ({ event }: { event: Claim }) => ({ id: event.id })))
      .to('payouts')
      .build();
    driver = new TopologyTestDriver(built);
    const input = driver.createInputTopic<Claim>('claims');
    input.pipeInput('c1', { id: 'c1', bad });
    input.pipeInput('c2', { id: 'c2' });
    await driver.runUntilIdle();

    const parked = readParked(driver, 'claims.parked');
    expect(parked.map((p) => [p.key, p.body.reason])).toEqual([['c1', 'POISON']]);
    expect(parked[0]!.body.errors.map((e) => e.error)).toEqual([expect.stringContaining(message), expect.stringContaining(message)]);
    expect(driver.createOutputTopic<{ id: string }>('payouts').readValuesToList()).toEqual([{ id: 'c2' }]);
  });
});
