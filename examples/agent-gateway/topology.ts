/**
 * The worker behind the agent gateway: each request record is a job, answered by an agent step
 * that publishes its progress with `ctx.status` and whose result goes to the response topic.
 *
 *     npm run build
 *     ./bin/orderly run dist/examples/agent-gateway/topology.js --bootstrap 127.0.0.1:9092 --group agent-jobs --state-dir .orderly/state/agent-jobs
 *
 * Input `agent-jobs`: key = job id, value = a request record (docs/jobs.md). Status updates go to
 * `agent-jobs.status`, responses to `agent-jobs.responses`. A prompt containing "poison" gets an
 * answer no schema accepts, so the job is parked after 2 attempts. Settings:
 * ORDERLY_MODEL_LATENCY_MS (the stand-in's latency, default 500), ORDERLY_MAX_IN_FLIGHT
 * (default 8), ORDERLY_RETRY_DELAY_MS (default 1000), ORDERLY_TOPIC_PREFIX (put before every
 * topic name).
 */
import { effect, json, sleep, stream, type DecideContext } from '../../src/index.js';
import { jobTopics, type RequestBody } from './jobRequest.js';

/** The stand-in model's answer, checked by the engine before it counts. */
export interface Answer {
  readonly answer: string;
  readonly words: number;
}

const answerSchema = {
  '~standard': {
    version: 1 as const,
    vendor: 'agent-gateway',
    validate(value: unknown) {
      const v = value as Partial<Answer> | null;
      if (typeof v?.answer === 'string' && typeof v.words === 'number') return { value: v as Answer };
      return { issues: [{ message: 'expected { answer: string, words: number }' }] };
    },
  },
};

function numberFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a whole number, got '${raw}'`);
  return value;
}

/** A stand-in for a model call in two stages, each announced on the status topic. */
function answer(latencyMs: number) {
  return async (request: RequestBody, ctx: DecideContext): Promise<unknown> => {
    await ctx.status({ stage: 'thinking' });
    await sleep(ctx.clock, latencyMs / 2, ctx.signal);
    await ctx.status({ stage: 'writing' });
    await sleep(ctx.clock, latencyMs / 2, ctx.signal);
    const { prompt } = request.input;
    if (prompt.includes('poison')) return { answer: 42 };
    return { answer: `You asked: ${prompt}`, words: prompt.split(/\s+/).filter(Boolean).length };
  };
}

const answered = effect('agent-answers', ({ event, decision }: { event: RequestBody; decision: Answer }, { state }) => {
  state.put(event.jobId, decision);
  return decision;
});

export function agentJobsTopology() {
  const topics = jobTopics(`${process.env.ORDERLY_TOPIC_PREFIX ?? ''}agent-jobs`);
  return stream<RequestBody>(topics.requests, { value: json<RequestBody>() })
    .keyedSerial({ maxInFlight: Math.max(1, numberFromEnv('ORDERLY_MAX_IN_FLIGHT', 8)) })
    .agentStep('answer', answer(numberFromEnv('ORDERLY_MODEL_LATENCY_MS', 500)), { schema: answerSchema })
    .park({ attempts: 2, retryDelayMs: numberFromEnv('ORDERLY_RETRY_DELAY_MS', 1_000) })
    .applyOnce(answered)
    .respond(topics.responses, { statusTopic: topics.status })
    .build();
}

export default agentJobsTopology();
