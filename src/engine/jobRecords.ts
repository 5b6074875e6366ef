import type { OutRecord } from '../ports/log.js';
import type { EngineEvent } from './events.js';
import { EFFECT_ID_HEADER } from './outputs.js';

/** The header that carries an event's job id, on requests, status updates and responses. */
export const JOB_ID_HEADER = 'orderly-job-id';

/** The version of the request, status and response records' schema (docs/jobs.md). */
export const JOB_SCHEMA_VERSION = 1;

/** A job's state as a response ends it: applied, parked (or held behind a parked key), or failed (dead-lettered, skipped). */
export type JobEnd = 'done' | 'parked' | 'failed';

/** A status record's value: one progress update of one call of the agent step. */
export interface StatusBody {
  readonly version: typeof JOB_SCHEMA_VERSION;
  readonly type: 'status';
  readonly jobId: string;
  readonly effectId: string;
  readonly step: string;
  /** The call that published it: unique per call, so two deliveries of one attempt differ. */
  readonly call: string;
  readonly attempt: number;
  /** 1, 2, ... per call. */
  readonly seq: number;
  readonly atMs: number;
  readonly update: unknown;
}

/** A response record's value: how the job ended. */
export interface ResponseBody {
  readonly version: typeof JOB_SCHEMA_VERSION;
  readonly type: 'response';
  readonly jobId: string;
  readonly effectId: string;
  readonly state: JobEnd;
  /** The value at `.respond()` once the effect was applied (`done` only). */
  readonly result?: unknown;
  /** Why the job was parked or failed. */
  readonly reason?: string;
  /** The call whose decision (or last failure) ended the job; null when no call of this delivery made one (a person's decision, a held event). */
  readonly call: string | null;
  /** How many status updates that call published: a reader has them all once it has seq 1..statusCount of `call`. */
  readonly statusCount: number;
  /**
   * With several agent steps only: each step that made a call in this delivery, with its last call
   * and how many updates that call published. A reader has every update of the job once it has
   * `seq` 1 to `statusCount` of each.
   */
  readonly steps?: Readonly<Record<string, { readonly call: string; readonly statusCount: number }>>;
  readonly atMs: number;
}

/** The job id of an event: its `orderly-job-id` header, else its effect id. */
export function jobIdOf(event: Pick<EngineEvent, 'headers' | 'effectId'>): string {
  return event.headers[JOB_ID_HEADER] || event.effectId;
}

const encoder = new TextEncoder();

/** A status or response record, keyed like its event, with its effect id and job id in headers. */
export function jobRecord(topic: string, event: Pick<EngineEvent, 'key' | 'headers' | 'effectId'>, body: StatusBody | ResponseBody): OutRecord {
  return {
    topic,
    key: event.key,
    value: encoder.encode(JSON.stringify(body)),
    headers: { [EFFECT_ID_HEADER]: event.effectId, [JOB_ID_HEADER]: body.jobId },
  };
}
