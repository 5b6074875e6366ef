// The agent gateway's table of jobs: what a stream sends, in which order, from which cursor.
import { describe, expect, it } from 'vitest';
import type { LogRecord, ResponseBody, StatusBody } from '../../../src/index.js';
import { cursorAfter, JobTable, START } from '../../../examples/agent-gateway/jobTable.js';

const JOB = 'job-1';

function record(offset: number, body: object): LogRecord {
  return { topic: 't', partition: 0, offset, key: JOB, value: new TextEncoder().encode(JSON.stringify(body)), timestampMs: 0, headers: {} };
}

const status = (call: string, seq: number): StatusBody => ({
  version: 1,
  type: 'status',
  jobId: JOB,
  effectId: 'e',
  step: 's',
  call,
  attempt: 1,
  seq,
  atMs: 0,
  update: { seq },
});
const response = (call: string, statusCount: number): ResponseBody => ({
  version: 1,
  type: 'response',
  jobId: JOB,
  effectId: 'e',
  state: 'done',
  result: 'ok',
  call,
  statusCount,
  atMs: 0,
});

describe('JobTable', () => {
  it('holds a response back until every update of its call is read, then ends the stream with it', () => {
    const table = new JobTable();
    table.accepted(JOB);
    table.addStatuses([record(0, status('1-a', 1))]);
    // The response topic is read apart from the status topic: here it is ahead.
    table.addResponses([record(0, response('1-a', 2))]);
    const first = table.eventsAfter(JOB, START);
    expect(first.events.map((e) => e.id)).toEqual(['s.0']);
    expect(first.ended).toBe(false);
    expect(table.view(JOB)).toMatchObject({ state: 'done', result: 'ok' });

    table.addStatuses([record(1, status('1-a', 2))]);
    const second = table.eventsAfter(JOB, first.cursor);
    expect(second.events.map((e) => e.id)).toEqual(['s.1', 'r']);
    expect(second.ended).toBe(true);
  });

  it('with several steps, holds the response until every update of each step’s call is read', () => {
    const table = new JobTable();
    table.accepted(JOB);
    // The last step published nothing; the first step's update is not read yet.
    table.addResponses([record(0, { ...response('1-b', 0), steps: { first: { call: '1-a', statusCount: 1 }, second: { call: '1-b', statusCount: 0 } } })]);
    const first = table.eventsAfter(JOB, START);
    expect(first).toMatchObject({ events: [], ended: false });
    table.addStatuses([record(0, status('1-a', 1))]);
    expect(table.eventsAfter(JOB, first.cursor).events.map((e) => e.id)).toEqual(['s.0', 'r']);
  });

  it('resumes after a Last-Event-ID, and sends nothing after the response', () => {
    const table = new JobTable();
    table.addStatuses([record(4, status('1-a', 1)), record(9, status('1-b', 1))]);
    table.addResponses([record(0, response('1-b', 1))]);
    expect(table.eventsAfter(JOB, cursorAfter('s.4')).events.map((e) => e.id)).toEqual(['s.9', 'r']);
    expect(table.eventsAfter(JOB, cursorAfter('r'))).toMatchObject({ events: [], ended: true });
    expect(table.eventsAfter(JOB, cursorAfter('garbage')).events.map((e) => e.id)).toEqual(['s.4', 's.9', 'r']);
  });

  it('states: accepted, then running with an update, and unknown ids are unknown', () => {
    const table = new JobTable();
    table.addRequests([record(0, { version: 1, type: 'request', jobId: JOB, input: { prompt: 'p' }, acceptedAtMs: 0 })]);
    expect(table.view(JOB)).toEqual({ jobId: JOB, state: 'accepted', statusUpdates: 0 });
    table.addStatuses([record(0, status('1-a', 1))]);
    expect(table.view(JOB)?.state).toBe('running');
    expect(table.view('other')).toBeUndefined();
  });
});
