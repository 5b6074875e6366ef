import { JOB_ID_HEADER, JOB_SCHEMA_VERSION, type OutRecord } from '../../src/index.js';

/** The largest request body the gateway accepts; a larger one is answered 413. */
export const MAX_BODY_BYTES = 64 * 1024;
/** The longest prompt a job may carry. */
export const MAX_PROMPT_CHARS = 8_000;

/** What a client posts to `POST /jobs`. */
export interface JobInput {
  readonly prompt: string;
}

/** A request record's value (docs/jobs.md): the job id and what the client asked. */
export interface RequestBody {
  readonly version: typeof JOB_SCHEMA_VERSION;
  readonly type: 'request';
  readonly jobId: string;
  readonly input: JobInput;
  readonly acceptedAtMs: number;
}

/** The posted body as a job's input, or the reason it is not one. */
export function parseJobInput(text: string): { ok: true; input: JobInput } | { ok: false; reason: string } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `the body is not JSON: ${(error as Error).message}` };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: false, reason: 'the body must be a JSON object: { "prompt": "..." }' };
  const extra = Object.keys(body).filter((k) => k !== 'prompt');
  if (extra.length > 0)
    return { ok: false, reason: `unknown field${extra.length > 1 ? 's' : ''} ${extra.map((k) => `'${k}'`).join(', ')}; the body is { "prompt": "..." }` };
  const { prompt } = body as { prompt?: unknown };
  if (typeof prompt !== 'string') return { ok: false, reason: `'prompt' must be a string, got ${prompt === undefined ? 'nothing' : typeof prompt}` };
  if (prompt.trim() === '') return { ok: false, reason: "'prompt' must not be empty" };
  if (prompt.length > MAX_PROMPT_CHARS) return { ok: false, reason: `'prompt' has ${prompt.length} characters; at most ${MAX_PROMPT_CHARS}` };
  return { ok: true, input: { prompt } };
}

/** The request record of a job: keyed by its id, so jobs run in parallel; its id in the `orderly-job-id` header too. */
export function requestRecord(topic: string, jobId: string, input: JobInput, acceptedAtMs: number): OutRecord {
  const body: RequestBody = { version: JOB_SCHEMA_VERSION, type: 'request', jobId, input, acceptedAtMs };
  return { topic, key: jobId, value: new TextEncoder().encode(JSON.stringify(body)), headers: { [JOB_ID_HEADER]: jobId } };
}

/** The topics of a gateway and its worker, from the request topic's name. */
export function jobTopics(requests: string): { requests: string; status: string; responses: string } {
  return { requests, status: `${requests}.status`, responses: `${requests}.responses` };
}
