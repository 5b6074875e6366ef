import type { LogRecord, ResponseBody, StatusBody } from '../../src/index.js';
import type { RequestBody } from './jobRequest.js';

/** A job's state as `GET /jobs/:id` shows it. */
export type JobState = 'accepted' | 'running' | 'done' | 'parked' | 'failed';

/** `GET /jobs/:id`'s answer. */
export interface JobView {
  readonly jobId: string;
  readonly state: JobState;
  readonly statusUpdates: number;
  readonly result?: unknown;
  readonly reason?: string;
}

/** One server-sent event of a job: a status update (id `s.<offset in the status topic>`) or its response (id `r`). */
export interface JobEvent {
  readonly id: string;
  readonly event: 'status' | 'response';
  readonly data: StatusBody | ResponseBody;
}

/** Where a client stands in a job's events: the last status offset it has, and whether it has the response. */
export interface Cursor {
  readonly statusOffset: number;
  readonly responded: boolean;
}

export const START: Cursor = { statusOffset: -1, responded: false };
export const RESPONSE_EVENT_ID = 'r';

/** The cursor after the event of id `lastEventId` (a `Last-Event-ID` header); the start for anything else. */
export function cursorAfter(lastEventId: string | undefined): Cursor {
  if (lastEventId === RESPONSE_EVENT_ID) return { statusOffset: Number.MAX_SAFE_INTEGER, responded: true };
  const match = /^s\.(\d+)$/.exec(lastEventId ?? '');
  return match ? { statusOffset: Number(match[1]), responded: false } : START;
}

interface Job {
  accepted: boolean;
  /** In status topic order: all of a job's updates share its key, so one partition. */
  readonly statuses: Array<{ readonly offset: number; readonly body: StatusBody }>;
  /** The first response ends the event stream; a later one (a parked job resolved by a person) only updates the state. */
  first?: ResponseBody;
  latest?: ResponseBody;
}

const decoder = new TextDecoder();

/**
 * What the gateway knows of every job, built only from the request, status and response topics
 * (so a restarted gateway rebuilds it by reading them from the start), and who is waiting on it.
 */
export class JobTable {
  private readonly jobs = new Map<string, Job>();
  private readonly waiting = new Map<string, Set<() => void>>();

  /** Records of the request topic. */
  addRequests(records: readonly LogRecord[]): void {
    for (const record of records) {
      const body = parse<RequestBody>(record, 'request');
      if (body) this.accepted(body.jobId);
    }
  }

  /** Records of the status topic. */
  addStatuses(records: readonly LogRecord[]): void {
    for (const record of records) {
      const body = parse<StatusBody>(record, 'status');
      if (!body) continue;
      this.job(body.jobId).statuses.push({ offset: record.offset, body });
      this.wake(body.jobId);
    }
  }

  /** Records of the response topic. */
  addResponses(records: readonly LogRecord[]): void {
    for (const record of records) {
      const body = parse<ResponseBody>(record, 'response');
      if (!body) continue;
      const job = this.job(body.jobId);
      job.first ??= body;
      job.latest = body;
      this.wake(body.jobId);
    }
  }

  /** A job the gateway has just had acknowledged by the broker (its request record will follow). */
  accepted(jobId: string): void {
    this.job(jobId).accepted = true;
    this.wake(jobId);
  }

  has(jobId: string): boolean {
    return this.jobs.has(jobId);
  }

  view(jobId: string): JobView | undefined {
    const job = this.jobs.get(jobId);
    if (!job) return undefined;
    const end = job.latest;
    const state: JobState = end?.state ?? (job.statuses.length > 0 ? 'running' : 'accepted');
    return {
      jobId,
      state,
      statusUpdates: job.statuses.length,
      ...(end?.result !== undefined ? { result: end.result } : {}),
      ...(end?.reason !== undefined ? { reason: end.reason } : {}),
    };
  }

  /**
   * The events after `cursor`, and the cursor after them. The response comes only once every
   * update of the call it names (of each step's call it names, with several steps) is here (the status topic is read apart from the response topic,
   * so a response can arrive first): then `ended` is true.
   */
  eventsAfter(jobId: string, cursor: Cursor): { events: JobEvent[]; cursor: Cursor; ended: boolean } {
    const job = this.jobs.get(jobId);
    if (!job || cursor.responded) return { events: [], cursor, ended: cursor.responded };
    const events: JobEvent[] = [];
    let { statusOffset } = cursor;
    for (const { offset, body } of job.statuses) {
      if (offset <= statusOffset) continue;
      events.push({ id: `s.${offset}`, event: 'status', data: body });
      statusOffset = offset;
    }
    const response = job.first;
    if (!response || !this.hasEveryUpdate(job, response)) return { events, cursor: { statusOffset, responded: false }, ended: false };
    events.push({ id: RESPONSE_EVENT_ID, event: 'response', data: response });
    return { events, cursor: { statusOffset, responded: true }, ended: true };
  }

  /** Calls `wake` whenever something of the job arrives; returns the way to stop. */
  watch(jobId: string, wake: () => void): () => void {
    let set = this.waiting.get(jobId);
    if (!set) this.waiting.set(jobId, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (set.size === 0) this.waiting.delete(jobId);
    };
  }

  private hasEveryUpdate(job: Job, response: ResponseBody): boolean {
    // With several agent steps the response names each step's last call; with one, its call.
    const calls = response.steps ? Object.values(response.steps) : [{ call: response.call, statusCount: response.statusCount }];
    // Updates of one call are read in their order, so the last one means all of them.
    return calls.every(
      ({ call, statusCount }) => statusCount === 0 || call === null || job.statuses.some(({ body }) => body.call === call && body.seq === statusCount),
    );
  }

  private job(jobId: string): Job {
    let job = this.jobs.get(jobId);
    if (!job) this.jobs.set(jobId, (job = { accepted: false, statuses: [] }));
    return job;
  }

  private wake(jobId: string): void {
    for (const wake of this.waiting.get(jobId) ?? []) wake();
  }
}

/** A record's JSON body if it is of this schema version and type; anything else is skipped. */
function parse<T extends { version: number; type: string; jobId: string }>(record: LogRecord, type: T['type']): T | undefined {
  if (record.value === null) return undefined;
  try {
    const body = JSON.parse(decoder.decode(record.value)) as T;
    return body.version === 1 && body.type === type && typeof body.jobId === 'string' ? body : undefined;
  } catch {
    return undefined;
  }
}
