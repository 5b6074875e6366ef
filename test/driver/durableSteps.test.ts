// Durable steps (ctx.step): a completed step's result is journaled, and an event tried again (a
// failed attempt, a 429, a crash, a resolved parked key's replay) resumes its run at the first
// step not completed; the journal goes with the event's end.
import { afterEach, describe, expect, it } from 'vitest';
import { RateLimited } from '../../src/dsl/rateLimited.js';
import type { DecideContext, DurableStepContext } from '../../src/graph/nodes.js';
import { sleep } from '../../src/ports/clock.js';
import { driverModes, TopologyTestDriver } from '../../testkit/driver.js';
import { decisionTopology, outcomesAt, type Decision, type Ev } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

/** An outside system that counts its calls by event and step, and answers after `latencyMs` of virtual time. */
function countingTool(latencyMs = 0) {
  const runs = new Map<string, number>();
  const call = async (ctx: DecideContext, step: DurableStepContext) => {
    runs.set(`${step.effectId} ${step.step}`, (runs.get(`${step.effectId} ${step.step}`) ?? 0) + 1);
    if (latencyMs > 0) await sleep(ctx.clock, latencyMs, step.signal);
    return { account: `acct of ${step.effectId}`, step: step.step };
  };
  return { call, runs: () => Object.fromEntries(runs) };
}

/** The run journals left in the store. */
function journals(d: TopologyTestDriver): Promise<Array<[string, unknown]>> {
  return d.storedEntries('run/');
}

describe('ctx.step: durable steps', () => {
  it('a failed attempt resumes at the first step not completed; the results come back as the first run saw them', async () => {
    const tool = countingTool();
    const seen: unknown[] = [];
    const reported: string[] = [];
    driver = new TopologyTestDriver(
      decisionTopology(async (_event, ctx): Promise<Decision> => {
        const account = await ctx.step('lookup-account', (s) => tool.call(ctx, s));
        seen.push(account);
        if (ctx.attempt === 1) throw new Error('the model lost its connection');
        await ctx.step('open-case', (s) => tool.call(ctx, s));
        return { action: 'refund' };
      }),
      { observer: { durableStep: (ended) => reported.push(`${ended.step} ${ended.effectId} ${ended.position} ${ended.name} ${ended.result}`) } },
    );
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'APPLIED']);
    expect(tool.runs()).toEqual({ 'events/0/0 lookup-account': 1, 'events/0/0 open-case': 1 });
    expect(seen).toEqual([
      { account: 'acct of events/0/0', step: 'lookup-account' },
      { account: 'acct of events/0/0', step: 'lookup-account' },
    ]);
    expect(reported).toEqual(['decide events/0/0 0 lookup-account ran', 'decide events/0/0 0 lookup-account replayed', 'decide events/0/0 1 open-case ran']);
    // Pruned in the write that ended the event.
    expect(await journals(driver)).toEqual([]);
  });

  it('a 429 after a completed step does not run it again', async () => {
    const tool = countingTool();
    let calls = 0;
    driver = new TopologyTestDriver(
      decisionTopology(async (_event, ctx): Promise<Decision> => {
        await ctx.step('lookup-account', (s) => tool.call(ctx, s));
        if (++calls === 1) throw new RateLimited(2_000);
        return { action: 'refund' };
      }),
    );
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['RATE_LIMITED', 'APPLIED']);
    expect(calls).toBe(2);
    expect(tool.runs()).toEqual({ 'events/0/0 lookup-account': 1 });
  });

  for (const mode of driverModes) {
    it(`a crash between two steps (${mode}): the restarted engine runs the completed step not again, the interrupted one again`, async () => {
      const tool = countingTool(5_000);
      driver = new TopologyTestDriver(
        decisionTopology(async (_event, ctx): Promise<Decision> => {
          await ctx.step('lookup-account', (s) => tool.call(ctx, s));
          await ctx.step('open-case', (s) => tool.call(ctx, s));
          return { action: 'refund' };
        }),
        { mode, commit: { everyMs: 60_000 } },
      );
      driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
      // lookup-account completes at 5 s, open-case would at 10 s. Exactly-once, no commit comes
      // between 5 s and the crash (the interval is a minute; the driver commits a transaction left
      // open only after 3 s): only the commit that ctx.step makes has made the journal durable.
      driver.crash({ at: 5_500 });
      await driver.runUntilIdle();
      expect(await journals(driver)).toHaveLength(1);
      driver.restart({ after: 1_000 });
      await driver.runUntilIdle();

      expect(driver.effects().map((e) => e.effectId)).toEqual(['events/0/0']);
      expect(tool.runs()).toEqual({ 'events/0/0 lookup-account': 1, 'events/0/0 open-case': 2 });
      expect(await journals(driver)).toEqual([]);
    });
  }

  it("a parked event's replay after a retry resolves its key resumes its run; its key's held event follows", async () => {
    const tool = countingTool();
    let modelFixed = false;
    driver = new TopologyTestDriver(
      decisionTopology(
        async (event, ctx): Promise<Decision> => {
          await ctx.step('lookup-account', (s) => tool.call(ctx, s));
          if (event.bad && !modelFixed) return { action: 'maybe' } as unknown as Decision;
          return { action: 'refund' };
        },
        { attempts: 2 },
      ),
    );
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1', bad: true });
    input.pipeInput('a', { id: 'a2' });
    await driver.runUntilIdle();
    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'PARKED']);
    expect(outcomesAt(driver, 0, 1)).toEqual(['HELD']);
    // Parked with its run: the journal stays for the replay.
    expect(await journals(driver)).toHaveLength(1);

    modelFixed = true;
    await driver.resolve(0, 'a', { retry: true });
    await driver.runUntilIdle();
    expect(driver.effects().map((e) => e.effectId)).toEqual(['events/0/0', 'events/0/1']);
    expect(tool.runs()).toEqual({ 'events/0/0 lookup-account': 1, 'events/0/1 lookup-account': 1 });
    expect(await journals(driver)).toEqual([]);
  });

  it('a parked run decided by a person, or discarded, leaves no journal', async () => {
    const tool = countingTool();
    driver = new TopologyTestDriver(
      decisionTopology(
        async (_event, ctx): Promise<Decision> => {
          await ctx.step('lookup-account', (s) => tool.call(ctx, s));
          return { action: 'maybe' } as unknown as Decision;
        },
        { attempts: 1 },
      ),
    );
    const input = driver.createInputTopic<Ev>('events');
    input.pipeInput('a', { id: 'a1' }, { partition: 0 });
    input.pipeInput('b', { id: 'b1' }, { partition: 0 });
    await driver.runUntilIdle();
    expect(await journals(driver)).toHaveLength(2);
    await driver.resolve(0, 'a', { decision: { action: 'reject' } });
    await driver.resolve(0, 'b', { discard: true });
    await driver.runUntilIdle();
    expect(outcomesAt(driver, 0, 0)).toContain('APPLIED');
    expect(outcomesAt(driver, 0, 1)).toContain('DISCARDED');
    expect(await journals(driver)).toEqual([]);
  });

  for (const onExhausted of ['dlq', 'skip'] as const) {
    it(`an event whose attempts ran out under onExhausted '${onExhausted}' leaves no journal; a parked one keeps it`, async () => {
      const tool = countingTool();
      driver = new TopologyTestDriver(
        decisionTopology(
          async (_event, ctx): Promise<Decision> => {
            await ctx.step('lookup-account', (s) => tool.call(ctx, s));
            return { action: 'maybe' } as unknown as Decision;
          },
          { attempts: 2, onExhausted },
        ),
      );
      driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
      await driver.runUntilIdle();
      expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', onExhausted === 'dlq' ? 'DEAD_LETTERED' : 'SKIPPED']);
      expect(tool.runs()).toEqual({ 'events/0/0 lookup-account': 1 });
      expect(await journals(driver)).toEqual([]);
    });
  }

  it('a step whose name differs from the journal at its position fails the attempt, naming both names and the fix, even if decide catches the error', async () => {
    const errors: string[] = [];
    driver = new TopologyTestDriver(
      decisionTopology(
        async (_event, ctx): Promise<Decision> => {
          // The code "changed" between the two attempts: the first step got a new name.
          const name = ctx.attempt === 1 ? 'lookup-account' : 'fetch-account';
          try {
            await ctx.step(name, () => ({ ok: true }));
          } catch (error) {
            errors.push((error as Error).message);
            return { action: 'refund' };
          }
          throw new Error('the model lost its connection');
        },
        { attempts: 2 },
      ),
    );
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
    await driver.runUntilIdle();

    expect(outcomesAt(driver, 0, 0)).toEqual(['RETRY', 'PARKED']);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/durable step 1 of event events\/0\/0 is 'lookup-account' in its run journal but the code asks for 'fetch-account'/);
    expect(errors[0]).toMatch(/Keep the old steps, in their order and with their names/);
    const parked = driver.history().find((h) => h.outcome === 'PARKED');
    expect(parked?.error).toBe(errors[0]);
    expect(driver.effects()).toEqual([]);
  });

  it('a result JSON cannot hold as it is fails at the step, naming the step, where in the result and the fix', async () => {
    const errors: string[] = [];
    driver = new TopologyTestDriver(
      decisionTopology(async (_event, ctx): Promise<Decision> => {
        for (const [name, result] of [
          ['opened-at', { case: { openedAt: new Date(0) } }],
          ['score', { score: Number.NaN }],
          ['ids', [1, undefined]],
        ] as const) {
          await ctx.step(name, () => result).catch((error: Error) => errors.push(error.message));
        }
        // undefined (a step with nothing to return) is fine.
        expect(await ctx.step('notify', () => undefined)).toBeUndefined();
        return { action: 'refund' };
      }),
    );
    driver.createInputTopic<Ev>('events').pipeInput('a', { id: 'a1' });
    await driver.runUntilIdle();

    expect(errors).toEqual([
      expect.stringMatching(
        /^ctx\.step 'opened-at' \(durable step 1 of agentStep 'decide', event events\/0\/0\): its result\.case\.openedAt is a Date, not a plain object.*return strings, numbers/,
      ),
      expect.stringMatching(/^ctx\.step 'score' \(durable step 2 .*: its result\.score is NaN, which JSON cannot hold/),
      expect.stringMatching(/^ctx\.step 'ids' \(durable step 3 .*: its result\[1\] is undefined, which JSON turns into null/),
    ]);
    expect(outcomesAt(driver, 0, 0)).toEqual(['APPLIED']);
  });
});
