// The agent gateway (examples/agent-gateway) end to end on the suite's broker: a real HTTP client
// (fetch) and an EventSource client library follow 200 concurrent jobs while the worker is killed
// (-9) and restarted and the gateway is restarted; bad requests; Last-Event-ID reconnects.
import { afterEach, describe, expect, inject, it } from 'vitest';
import { EventSource } from 'eventsource';
import pino from 'pino';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ResponseBody, StatusBody } from '../../src/index.js';
import { startGateway, type RunningGateway } from '../../examples/agent-gateway/gateway.js';
import { scenario } from './disputes.js';
import { readAll } from './kafkaClient.js';
import { Worker, type WorkerOptions } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const JOBS = 200;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const workers: Worker[] = [];
const gateways: RunningGateway[] = [];
const sources: EventSource[] = [];
afterEach(async () => {
  for (const source of sources.splice(0)) source.close();
  await Promise.all(workers.splice(0).map((w) => w.kill()));
  await Promise.all(gateways.splice(0).map((g) => g.close()));
});

interface Received {
  readonly id: string;
  readonly type: 'status' | 'response';
  readonly data: StatusBody | ResponseBody;
}

/** One EventSource on a job's events, kept until its response comes (it reconnects by itself meanwhile). */
function follow(url: string): { readonly events: Received[]; readonly done: Promise<void> } {
  const source = new EventSource(url);
  sources.push(source);
  const events: Received[] = [];
  const done = new Promise<void>((resolve, reject) => {
    source.addEventListener('status', (e) => events.push({ id: e.lastEventId, type: 'status', data: JSON.parse(e.data) as StatusBody }));
    source.addEventListener('response', (e) => {
      events.push({ id: e.lastEventId, type: 'response', data: JSON.parse(e.data) as ResponseBody });
      source.close();
      resolve();
    });
    // A closed source (an error status such as 404) will not reconnect: that is a failure.
    source.addEventListener('error', () => {
      if (source.readyState === EventSource.CLOSED) reject(new Error(`${url}: the event stream closed without a response`));
    });
  });
  return { events, done };
}

async function post(base: string, body: string): Promise<{ status: number; body: Record<string, unknown>; location: string | null }> {
  const res = await fetch(`${base}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, location: res.headers.get('location') };
}

async function until(what: string, predicate: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await sleep(100);
  }
}

/** The events of a stream read with fetch, as `id` and `event` pairs. */
async function readStream(url: string, lastEventId: string): Promise<{ status: number; ids: string[] }> {
  const res = await fetch(url, { headers: { 'last-event-id': lastEventId } });
  const text = await res.text();
  return { status: res.status, ids: [...text.matchAll(/^id: (.+)$/gm)].map((m) => m[1]!) };
}

/**
 * A gateway on a fresh request topic (any free port) and a worker of the agent-jobs topology
 * behind it, with `args` added to the worker's.
 */
async function setUp(args: readonly string[]) {
  const { prefix, group, stateDir } = await scenario('gateway');
  const topic = `${prefix}agent-jobs`;
  const logger = pino({ level: 'warn' });
  const fatal: Error[] = [];
  const start = (port: number) => startGateway({ bootstrap, port, topic, logger, onFatal: (e) => fatal.push(e) });
  const gateway = await start(0);
  gateways.push(gateway);
  const workerOptions: WorkerOptions = {
    bootstrap,
    group,
    stateDir,
    topicPrefix: prefix,
    sourceModule: 'dist/examples/agent-gateway/topology.js',
    // Slow enough that the kill lands with calls in flight; static membership, so the restarted worker takes its partitions back at once.
    env: { ORDERLY_MODEL_LATENCY_MS: '1000', ORDERLY_RETRY_DELAY_MS: '200' },
    args: ['--instance-id', `${prefix}worker`, ...args],
  };
  workers.push(new Worker(workerOptions));
  return { base: gateway.url, port: Number(new URL(gateway.url).port), start, workerOptions, fatal, topic };
}

/** Posts one job per prompt, all at once; each is accepted with a fresh job id and its Location. */
async function postJobs(base: string, prompts: readonly string[]): Promise<string[]> {
  const accepted = await Promise.all(prompts.map((prompt) => post(base, JSON.stringify({ prompt }))));
  const ids = accepted.map((a) => String(a.body.jobId));
  for (const [i, a] of accepted.entries()) {
    expect(a.status).toBe(202);
    expect(ids[i]).toMatch(UUID_V4);
    expect(a.location).toBe(`/jobs/${ids[i]}`);
  }
  expect(new Set(ids).size).toBe(prompts.length);
  return ids;
}

/** Kills the first worker once `answered` jobs have their response, and starts another in its place; returns how many were answered then. */
async function killWorkerAt(answered: number, responded: () => number, options: WorkerOptions): Promise<number> {
  await until(`${answered} jobs answered`, () => responded() >= answered, 90_000);
  await workers[0]!.kill();
  const atKill = responded();
  workers.push(new Worker(options));
  return atKill;
}

/** Waits for every stream's response, naming how far they got if they do not. */
async function allAnswered(streams: ReadonlyArray<{ done: Promise<void> }>, responded: () => number): Promise<void> {
  await Promise.race([
    Promise.all(streams.map((s) => s.done)),
    sleep(90_000).then(() => {
      throw new Error(`${responded()} of ${streams.length} jobs answered after 90 s\n${workers.at(-1)!.tail()}`);
    }),
  ]);
}

describe('agent gateway on Kafka', () => {
  it(`follows ${JOBS} concurrent jobs to exactly one response each through a kill -9 of the worker and a gateway restart`, async () => {
    const { base, port, start, workerOptions, fatal } = await setUp([]);
    let gateway = gateways[0]!;
    // Bad requests, answered before anything reaches Kafka.
    const malformed = await post(base, '{"prompt": ');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toMatch(/^the body is not JSON: /);
    expect(await post(base, '{"prompt": 3}')).toMatchObject({ status: 400, body: { error: "'prompt' must be a string, got number" } });
    expect(await post(base, '{"prompt": "a", "model": "x"}')).toMatchObject({
      status: 400,
      body: { error: `unknown field 'model'; the body is { "prompt": "..." }` },
    });
    expect(await post(base, '[1]')).toMatchObject({ status: 400, body: { error: 'the body must be a JSON object: { "prompt": "..." }' } });
    expect(await post(base, JSON.stringify({ prompt: 'x'.repeat(70_000) }))).toMatchObject({ status: 413, body: { error: 'the body is over 65536 bytes' } });
    const unknown = crypto.randomUUID();
    expect((await fetch(`${base}/jobs/${unknown}`)).status).toBe(404);
    expect((await fetch(`${base}/jobs/${unknown}/events`)).status).toBe(404);
    expect((await fetch(`${base}/jobs/not-a-job-id`)).status).toBe(404);
    expect((await fetch(`${base}/jobs`)).status).toBe(405);

    // 200 jobs at once, one in 20 poison (parked after its attempts).
    const prompts = Array.from({ length: JOBS }, (_, i) => (i % 20 === 7 ? `poison ${i}` : `question ${i}`));
    const ids = await postJobs(base, prompts);
    const streams = ids.map((id) => follow(`${base}/jobs/${id}/events`));
    const responded = () => streams.filter((s) => s.events.some((e) => e.type === 'response')).length;

    // The worker killed with about a quarter of the jobs answered, and restarted.
    const answeredAtKill = await killWorkerAt(JOBS / 4, responded, workerOptions);

    // The gateway restarted once more jobs are answered: the streams reconnect with Last-Event-ID.
    await until('half of the jobs answered', () => responded() >= JOBS / 2, 90_000);
    const seenAtRestart = streams.map((s) => s.events.length);
    await gateway.close();
    gateways.splice(gateways.indexOf(gateway), 1);
    gateway = await start(port);
    gateways.push(gateway);
    // Rebuilt from the topics: every job is known again at once.
    const states = await Promise.all(ids.map(async (id) => (await fetch(`${base}/jobs/${id}`)).status));
    expect(states.every((s) => s === 200)).toBe(true);

    await allAnswered(streams, responded);
    expect(fatal).toEqual([]);
    expect(answeredAtKill).toBeLessThan(JOBS);

    let redeliveredCalls = 0;
    for (const [i, { events }] of streams.entries()) {
      const responses = events.filter((e) => e.type === 'response');
      expect(responses, `job ${i}: one response`).toHaveLength(1);
      expect(events.at(-1)!.type).toBe('response');
      // Nothing seen twice across the reconnects: each reconnect resumed after its Last-Event-ID.
      expect(new Set(events.map((e) => e.id)).size, `job ${i}: no event twice`).toBe(events.length);
      const statuses = events.filter((e) => e.type === 'status').map((e) => e.data as StatusBody);
      const offsets = events.filter((e) => e.type === 'status').map((e) => Number(e.id.slice(2)));
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
      const response = responses[0]!.data as ResponseBody;
      expect(response.jobId).toBe(ids[i]);
      expect(statuses.filter((s) => s.call === response.call).map((s) => s.seq)).toEqual(Array.from({ length: response.statusCount }, (_, n) => n + 1));
      if (prompts[i]!.startsWith('poison')) {
        expect(response).toMatchObject({ state: 'parked', statusCount: 2 });
        expect(response.call).toMatch(/^2-/);
      } else {
        expect(response).toMatchObject({ state: 'done', result: { answer: `You asked: ${prompts[i]}`, words: 2 } });
      }
      // A call cut by the kill left its updates; the call after it has the same attempt and its own id.
      const calls = new Map<string, number>();
      for (const s of statuses) calls.set(s.call, s.attempt);
      if (calls.size > new Set(calls.values()).size) redeliveredCalls += 1;
    }
    expect(redeliveredCalls, 'jobs whose call the kill cut and a new call redid').toBeGreaterThan(0);
    expect(
      seenAtRestart.some((n, i) => n > 0 && streams[i]!.events.at(-1)!.type === 'response' && streams[i]!.events.length > n),
      'streams that resumed after the gateway restart',
    ).toBe(true);

    const views = await Promise.all(ids.map(async (id) => (await (await fetch(`${base}/jobs/${id}`)).json()) as { state: string; result?: unknown }));
    expect(views.map((v) => v.state)).toEqual(prompts.map((p) => (p.startsWith('poison') ? 'parked' : 'done')));

    // A client that comes after the end gets every update and the response.
    const late = follow(`${base}/jobs/${ids[0]}/events`);
    await late.done;
    expect(late.events.map((e) => e.id)).toEqual(streams[0]!.events.map((e) => e.id));
    // Last-Event-ID by hand: only what follows it; after the response, 204 (an EventSource stops).
    const all = streams[0]!.events.map((e) => e.id);
    expect(await readStream(`${base}/jobs/${ids[0]}/events`, all[0]!)).toEqual({ status: 200, ids: all.slice(1) });
    expect((await readStream(`${base}/jobs/${ids[0]}/events`, 'r')).status).toBe(204);
    console.log(`agent gateway: ${JOBS} jobs, ${answeredAtKill} answered at the kill, ${redeliveredCalls} with a call redone after it`);
  }, 180_000);

  it('with --exactly-once, a kill -9 leaves each job one response record, and each update of a call once', async () => {
    const { base, workerOptions, fatal, topic } = await setUp(['--exactly-once', '--commit-every-ms', '300']);
    const prompts = Array.from({ length: 40 }, (_, i) => (i % 20 === 3 ? `poison ${i}` : `question ${i}`));
    const ids = await postJobs(base, prompts);
    const streams = ids.map((id) => follow(`${base}/jobs/${id}/events`));
    const responded = () => streams.filter((s) => s.events.some((e) => e.type === 'response')).length;
    const answeredAtKill = await killWorkerAt(10, responded, workerOptions);
    await allAnswered(streams, responded);
    expect(fatal).toEqual([]);
    expect(answeredAtKill).toBeLessThan(prompts.length);

    // A read_committed reader: on an at-least-once worker a redelivered, finished job sends its response again; here never.
    const responses = (await readAll(bootstrap, `${topic}.responses`)).map((r) => JSON.parse(r.value!) as ResponseBody);
    expect(responses.map((r) => r.jobId).sort()).toEqual([...ids].sort());
    const updates = (await readAll(bootstrap, `${topic}.status`)).map((r) => JSON.parse(r.value!) as StatusBody);
    const perCall = new Map<string, number[]>();
    for (const u of updates) perCall.set(`${u.jobId} ${u.call}`, [...(perCall.get(`${u.jobId} ${u.call}`) ?? []), u.seq]);
    for (const seqs of perCall.values()) expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, n) => n + 1));
    for (const r of responses) expect(perCall.get(`${r.jobId} ${r.call}`)).toEqual(Array.from({ length: r.statusCount }, (_, n) => n + 1));
    expect(responses.filter((r) => r.state === 'parked').length).toBe(2);
  }, 180_000);
});
