// Status updates (ctx.status) and responses (.respond()): what a reader of the two topics sees on
// success, on parking, dead-lettering and skipping, and after a crash in the middle of a call.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { effect } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import { sleep } from '../../src/ports/clock.js';
import type { ResponseBody, StatusBody } from '../../src/engine/jobRecords.js';
import type { Disposition } from '../../src/graph/nodes.js';
import { TopologyTestDriver } from '../../testkit/driver.js';

interface Job {
  readonly prompt: string;
  readonly ms?: number;
}
const Answer = z.object({ answer: z.string() });

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close().catch(() => undefined);
  driver = undefined;
});

function jobsTopology(onExhausted: Disposition = 'park') {
  return stream<Job>('jobs')
    .keyedSerial({ maxInFlight: 2 })
    .agentStep(
      'answer',
      async (job, ctx) => {
        await ctx.status({ stage: 'thinking' });
        await sleep(ctx.clock, job.ms ?? 100, ctx.signal);
        await ctx.status({ stage: 'drafting' });
        return job.prompt === 'poison' ? { answer: 42 } : { answer: job.prompt.toUpperCase() };
      },
      { schema: Answer },
    )
    .park({ attempts: 2, retryDelayMs: 1_000, onExhausted })
    .applyOnce(effect('answers', ({ event, decision }: { event: Job; decision: { answer: string } }) => ({ prompt: event.prompt, answer: decision.answer })))
    .respond('jobs.responses')
    .build();
}

function start(options: { onExhausted?: Disposition; exactlyOnce?: boolean } = {}) {
  const d = new TopologyTestDriver(jobsTopology(options.onExhausted), { commit: 'each', mode: options.exactlyOnce ? 'exactlyOnce' : 'plain' });
  driver = d;
  return {
    d,
    input: d.createInputTopic<Job>('jobs'),
    status: d.createOutputTopic<StatusBody>('jobs.status'),
    responses: d.createOutputTopic<ResponseBody>('jobs.responses'),
  };
}

const job = (id: string) => ({ partition: 0, headers: { 'orderly-job-id': id } });

describe('ctx.status and .respond()', () => {
  it('publishes each status update with the job id, the call and a sequence number, then one response naming that call', async () => {
    const { d, input, status, responses } = start();
    input.pipeInput('k1', { prompt: 'hello' }, job('job-1'));
    await d.runUntilIdle();

    const updates = status.readRecordsToList();
    expect(updates.map((r) => [r.key, r.headers['orderly-job-id'], r.value.seq, r.value.attempt, r.value.update])).toEqual([
      ['k1', 'job-1', 1, 1, { stage: 'thinking' }],
      ['k1', 'job-1', 2, 1, { stage: 'drafting' }],
    ]);
    const call = updates[0]!.value.call;
    expect(updates.every((r) => r.value.version === 1 && r.value.type === 'status' && r.value.call === call && r.value.step === 'answer')).toBe(true);
    const [response, ...more] = responses.readRecordsToList();
    expect(more).toEqual([]);
    expect(response!.key).toBe('k1');
    expect(response!.value).toEqual({
      version: 1,
      type: 'response',
      jobId: 'job-1',
      effectId: 'jobs/0/0',
      state: 'done',
      result: { prompt: 'hello', answer: 'HELLO' },
      call,
      statusCount: 2,
      atMs: 100,
    });
  });

  it('without the header, the job id is the effect id', async () => {
    const { d, input, responses } = start();
    input.pipeInput('k1', { prompt: 'x' }, { partition: 0 });
    await d.runUntilIdle();
    expect(responses.readValuesToList().map((r) => r.jobId)).toEqual(['jobs/0/0']);
  });

  it('marks the updates of each attempt, and answers a parked event and the one held behind it as parked', async () => {
    const { d, input, status, responses } = start();
    input.pipeInput('k1', { prompt: 'poison' }, job('job-p'));
    input.pipeInput('k1', { prompt: 'later' }, job('job-h'));
    await d.runUntilIdle();

    const updates = status.readValuesToList();
    expect(updates.map((u) => [u.jobId, u.attempt, u.seq])).toEqual([
      ['job-p', 1, 1],
      ['job-p', 1, 2],
      ['job-p', 2, 1],
      ['job-p', 2, 2],
    ]);
    expect(updates[0]!.call).not.toBe(updates[2]!.call);
    const answers = responses.readValuesToList();
    expect(answers.map((r) => [r.jobId, r.state])).toEqual([
      ['job-p', 'parked'],
      ['job-h', 'parked'],
    ]);
    expect(answers[0]!.reason).toMatch(/^parked: agentStep 'answer': decision failed its schema/);
    expect(answers[0]!.call).toBe(updates[2]!.call);
    expect(answers[0]!.statusCount).toBe(2);
    expect(answers[1]).toMatchObject({ reason: 'held: an earlier event of its key is parked', call: null, statusCount: 0 });
  });

  it('a crash between the parking and its response: the redelivered event sends the same response, naming the call and its updates', async () => {
    const { d, input, status, responses } = start();
    input.pipeInput('k1', { prompt: 'poison' }, job('job-p'));
    d.crash({ point: 'parking' });
    await d.runUntilIdle();
    expect(responses.readValuesToList()).toEqual([]);
    d.restart();
    await d.runUntilIdle();
    const updates = status.readValuesToList();
    expect(updates.map((u) => [u.attempt, u.seq])).toEqual([
      [1, 1],
      [1, 2],
      [2, 1],
      [2, 2],
    ]);
    const [response, ...more] = responses.readValuesToList();
    expect(more).toEqual([]);
    expect(response).toMatchObject({ jobId: 'job-p', state: 'parked', call: updates[2]!.call, statusCount: 2 });
  });

  it.each(['dlq', 'skip'] as const)("answers failed when attempts run out with onExhausted '%s'", async (onExhausted) => {
    const { d, input, responses } = start({ onExhausted });
    input.pipeInput('k1', { prompt: 'poison' }, job('job-p'));
    await d.runUntilIdle();
    const [response, ...more] = responses.readValuesToList();
    expect(more).toEqual([]);
    expect(response).toMatchObject({ jobId: 'job-p', state: 'failed', statusCount: 2 });
    expect(response!.reason).toMatch(onExhausted === 'dlq' ? /^dead-lettered: / : /^skipped: /);
  });

  /** One slow job, the engine crashed in the middle of its call and restarted: its updates and its one response. */
  async function crashedMidCall(exactlyOnce: boolean) {
    const { d, input, status, responses } = start({ exactlyOnce });
    input.pipeInput('k1', { prompt: 'slow', ms: 1_000 }, job('job-c'));
    d.crash({ at: 500 });
    d.restart({ after: 600 });
    await d.runUntilIdle();
    const [response, ...more] = responses.readValuesToList();
    expect(more).toEqual([]);
    return { updates: status.readValuesToList(), response: response! };
  }

  it('at-least-once: a call cut by a crash leaves its updates; the redelivered call has the same attempt, another call id, and the response names it', async () => {
    const { updates, response } = await crashedMidCall(false);
    expect(updates.map((u) => [u.attempt, u.seq])).toEqual([
      [1, 1],
      [1, 1],
      [1, 2],
    ]);
    expect(updates[0]!.call).not.toBe(updates[1]!.call);
    expect(response).toMatchObject({ state: 'done', call: updates[1]!.call, statusCount: 2 });
  });

  it('exactly-once: the updates of a call cut by a crash go with its aborted transaction; a reader sees one call', async () => {
    const { updates, response } = await crashedMidCall(true);
    expect(updates.map((u) => [u.attempt, u.seq])).toEqual([
      [1, 1],
      [1, 2],
    ]);
    expect(response).toMatchObject({ state: 'done', call: updates[0]!.call, statusCount: 2 });
  });

  it('ctx.status without .respond() fails the attempt with the fix', async () => {
    const topology = stream<Job>('jobs')
      .keyedSerial()
      .agentStep('answer', async (_job, ctx) => {
        await ctx.status('x');
        return { answer: 'y' };
      })
      .park({ attempts: 1, onExhausted: 'skip' })
      .applyOnce(effect('answers', () => undefined))
      .build();
    const d = new TopologyTestDriver(topology, { commit: 'each' });
    driver = d;
    d.createInputTopic<Job>('jobs').pipeInput('k', { prompt: 'p' });
    await d.runUntilIdle();
    expect(d.history().map((h) => [h.outcome, h.error])).toEqual([
      [
        'SKIPPED',
        "agentStep 'answer' threw: agentStep 'answer': ctx.status() needs a status topic; declare .respond(topic) in the topology (the status topic defaults to '<source>.status')",
      ],
    ]);
  });
});

describe('.respond() after two agent steps', () => {
  it('sends one response per event, with the status updates of each step and each step’s last call', async () => {
    const Kind = z.object({ kind: z.enum(['short', 'long']) });
    const topology = stream<Job>('jobs')
      .keyedSerial({ maxInFlight: 4 })
      .agentStep(
        'classify',
        async (job, ctx) => {
          await ctx.status({ stage: 'classifying' });
          await sleep(ctx.clock, 50, ctx.signal);
          return { kind: job.prompt.length > 3 ? 'long' : 'short' };
        },
        { schema: Kind },
      )
      .park({ attempts: 1 })
      .agentStep(
        'answer',
        async ({ event }: { event: Job; decision: z.infer<typeof Kind> }, ctx) => {
          await ctx.status({ stage: 'thinking', kind: (ctx.decisions.classify as z.infer<typeof Kind>).kind });
          await sleep(ctx.clock, event.ms ?? 100, ctx.signal);
          await ctx.status({ stage: 'drafting' });
          return { answer: event.prompt.toUpperCase() };
        },
        { schema: Answer },
      )
      .park({ attempts: 2, retryDelayMs: 1_000 })
      .applyOnce(
        effect('answers', ({ event, decision }: { event: { event: Job; decision: z.infer<typeof Kind> }; decision: { answer: string } }) => ({
          prompt: event.event.prompt,
          kind: event.decision.kind,
          answer: decision.answer,
        })),
      )
      .respond('jobs.responses')
      .build();
    const d = new TopologyTestDriver(topology, { commit: 'each' });
    driver = d;
    const input = d.createInputTopic<Job>('jobs');
    input.pipeInput('k1', { prompt: 'hi' }, job('job-1'));
    input.pipeInput('k1', { prompt: 'hello', ms: 30 }, job('job-2'));
    input.pipeInput('k2', { prompt: 'bonjour' }, job('job-3'));
    await d.runUntilIdle();

    const responses = d.createOutputTopic<ResponseBody>('jobs.responses').readValuesToList();
    const updates = d.createOutputTopic<StatusBody>('jobs.status').readValuesToList();
    // One response per event, each done with the effect's result.
    expect(responses.map((r) => [r.jobId, r.state, r.result]).sort()).toEqual([
      ['job-1', 'done', { prompt: 'hi', kind: 'short', answer: 'HI' }],
      ['job-2', 'done', { prompt: 'hello', kind: 'long', answer: 'HELLO' }],
      ['job-3', 'done', { prompt: 'bonjour', kind: 'long', answer: 'BONJOUR' }],
    ]);
    for (const response of responses) {
      const own = updates.filter((u) => u.jobId === response.jobId);
      // Each step's updates: one call each, numbered from 1 within it.
      expect(own.filter((u) => u.step === 'classify').map((u) => [u.seq, u.update])).toEqual([[1, { stage: 'classifying' }]]);
      expect(own.filter((u) => u.step === 'answer').map((u) => [u.seq, (u.update as { stage: string }).stage])).toEqual([
        [1, 'thinking'],
        [2, 'drafting'],
      ]);
      const classify = own.find((u) => u.step === 'classify')!;
      const answer = own.find((u) => u.step === 'answer')!;
      expect(classify.call).not.toBe(answer.call);
      // The response names the last call (the answer's), and each step's last call with its count.
      expect(response).toMatchObject({
        call: answer.call,
        statusCount: 2,
        steps: { classify: { call: classify.call, statusCount: 1 }, answer: { call: answer.call, statusCount: 2 } },
      });
    }
    expect(d.history().map((h) => h.outcome)).toEqual(['APPLIED', 'APPLIED', 'APPLIED']);
  });
});
