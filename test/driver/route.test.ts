// .route(name, rule): a deterministic rule decides routine events before the agent step, which
// then makes no call; the decision is marked with who made it, for the effect and the outcome,
// and the mark survives a park and its replay.
import { afterEach, describe, expect, it } from 'vitest';
import { effect, type EffectContext } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import type { DecideContext, DecidedBy } from '../../src/graph/nodes.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { Decision, outcomesAt, readParked, type Ev } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

/** What the effect sends: the decision and who made it, as the effect saw it. */
interface Marked {
  readonly id: string;
  readonly action: string;
  readonly decidedBy: Readonly<Record<string, DecidedBy>>;
}

interface Options {
  /** The rule: a decision, undefined, or a throw. */
  readonly rule?: (e: Ev) => unknown;
  /** Effect attempts that throw first, by event id. */
  readonly effectFailures?: Map<string, number>;
}

/** Ids starting with `r` are routine: refunded by the rule. */
const routine = (e: Ev) => (e.id.startsWith('r') ? { action: 'refund' } : undefined);

function topology(options: Options = {}) {
  const calls: string[] = [];
  const decide = (e: Ev, ctx: DecideContext) => {
    calls.push(`${e.id}@${ctx.clock.now()}`);
    return { action: 'reject' as const };
  };
  const failures = options.effectFailures ?? new Map<string, number>();
  const built = stream<Ev>('events')
    .keyedSerial({ maxInFlight: 2 })
    .route('routine', options.rule ?? routine)
    .agentStep('decide', decide, { schema: Decision })
    .park({ attempts: 2, retryDelayMs: 100 })
    .applyOnce(
      effect('fx', (v: { event: Ev; decision: Decision }, ctx: EffectContext): Marked => {
        const left = failures.get(v.event.id) ?? 0;
        if (left > 0) {
          failures.set(v.event.id, left - 1);
          throw new Error(`the ledger is down for ${v.event.id}`);
        }
        return { id: v.event.id, action: v.decision.action, decidedBy: ctx.decidedBy };
      }),
    )
    .to('out')
    .build();
  return { built, calls };
}

describe('route', () => {
  it('decides routine events without a model call, leaves the others to the agent step, and marks who decided', async () => {
    const { built, calls } = topology();
    driver = new TopologyTestDriver(built);
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'r1' }, { partition: 0 });
    input.pipeInput('b', { id: 'x1' }, { partition: 0 });
    input.pipeInput('a', { id: 'r2' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(calls).toEqual(['x1@0']);
    expect(driver.createOutputTopic<Marked>('out').readValuesToList()).toEqual([
      { id: 'r1', action: 'refund', decidedBy: { decide: 'rule' } },
      { id: 'x1', action: 'reject', decidedBy: { decide: 'agent' } },
      { id: 'r2', action: 'refund', decidedBy: { decide: 'rule' } },
    ]);
    expect(driver.history().map((h) => [h.offset, h.outcome, h.decidedBy])).toEqual([
      [0, 'APPLIED', { decide: 'rule' }],
      [1, 'APPLIED', { decide: 'agent' }],
      [2, 'APPLIED', { decide: 'rule' }],
    ]);
  });

  it("parks at once an event whose rule decision fails the step's schema, naming the route; its key is held", async () => {
    const { built, calls } = topology({ rule: (e) => (e.id === 'r1' ? { action: 'maybe' } : undefined) });
    driver = new TopologyTestDriver(built);
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'r1' }, { partition: 0 });
    input.pipeInput('a', { id: 'x2' }, { partition: 0 });
    await driver.runUntilIdle();

    expect(calls).toEqual([]);
    const parked = readParked(driver);
    expect(parked.map((p) => [p.body.reason, p.body.step, p.body.attempts])).toEqual([
      ['POISON', 'decide', 1],
      ['HELD', 'decide', 0],
    ]);
    expect(parked[0]!.body.errors[0]!.error).toMatch(
      /^route 'routine' threw: its decision for agentStep 'decide' was refused: agentStep 'decide': decision failed its schema: action: /,
    );

    // A person's decision replays the key: marked as a person's, then the held event goes to the agent.
    await driver.resolve(0, 'a', { decision: { action: 'reject' } });
    await driver.runUntilIdle();
    expect(driver.createOutputTopic<Marked>('out').readValuesToList()).toEqual([
      { id: 'r1', action: 'reject', decidedBy: { decide: 'person' } },
      { id: 'x2', action: 'reject', decidedBy: { decide: 'agent' } },
    ]);
    expect(calls.map((c) => c.split('@')[0])).toEqual(['x2']);
  });

  it("keeps the rule's mark through a park and its replay: the replayed event is not decided again", async () => {
    const { built, calls } = topology({ effectFailures: new Map([['r1', 2]]) });
    driver = new TopologyTestDriver(built);
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'r1' }, { partition: 0 });
    await driver.runUntilIdle();
    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'PARKED']);

    await driver.resolve(0, 'a', { retry: true });
    await driver.runUntilIdle();
    expect(calls).toEqual([]);
    expect(driver.createOutputTopic<Marked>('out').readValuesToList()).toEqual([{ id: 'r1', action: 'refund', decidedBy: { decide: 'rule' } }]);
    expect(driver.history().at(-1)).toMatchObject({ outcome: 'APPLIED', replayed: true, decidedBy: { decide: 'rule' } });
  });
});
