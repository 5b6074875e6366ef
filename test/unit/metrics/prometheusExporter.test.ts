import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { Outcome, type OutcomeEvent } from '../../../src/engine/outcomes.js';
import type { EngineStatus } from '../../../src/engine/engineStatus.js';
import { PrometheusExporter, serveMetrics } from '../../../src/metrics/index.js';
import { exposition } from './exposition.js';

function outcome(outcome: Outcome, offset: number): OutcomeEvent {
  return { outcome, atMs: 0, topic: 'disputes', partition: 1, offset, key: 'acct-1', effectId: `disputes/1/${offset}` };
}

const status: EngineStatus = {
  inFlight: 3,
  budgets: [{ step: 'decide', source: 'learned', calls: 6, windowMs: 10_000 }],
  partitions: [
    { topic: 'disputes', partition: 0, committedOffset: 5, highWatermark: 12, parkedKeys: 0, heldEvents: 0 },
    { topic: 'disputes', partition: 1, committedOffset: undefined, highWatermark: 4, parkedKeys: 2, heldEvents: 5 },
  ],
};

describe('PrometheusExporter over an observer stream', () => {
  it('counts outcomes, model calls, 429s and their latency per step, redeliveries and commits', async () => {
    const exporter = new PrometheusExporter();
    const observer = exporter.observer();
    for (const offset of [0, 1, 2, 1, 2, 3]) observer.received!({ topic: 'disputes', partition: 1, offset });
    observer.received!({ topic: 'disputes', partition: 0, offset: 0 });
    observer.outcome!(outcome(Outcome.APPLIED, 0));
    observer.outcome!(outcome(Outcome.APPLIED, 1));
    observer.outcome!(outcome(Outcome.DUPLICATE, 1));
    observer.outcome!(outcome(Outcome.PARKED, 2));
    for (let i = 0; i < 4; i++) observer.modelCall!({ step: 'decide', effectId: 'e', topic: 'in', partition: 0, offset: i, atMs: 0, attempt: 1 });
    observer.modelCallEnded!({ step: 'decide', effectId: 'e', atMs: 100, durationMs: 100, result: 'rate_limited' });
    observer.modelCallEnded!({ step: 'decide', effectId: 'e', atMs: 4_000, durationMs: 3_000, result: 'answered' });
    observer.modelCallEnded!({ step: 'decide', effectId: 'e', atMs: 4_000, durationMs: 3_000, result: 'answered' });
    observer.modelCallEnded!({ step: 'decide', effectId: 'e', atMs: 4_000, durationMs: 500, result: 'failed' });
    observer.committed!({ topic: 'disputes', partition: 1, offset: 2, finishedAbove: 0, atMs: 0 });
    const durable = { step: 'decide', effectId: 'e', position: 0, atMs: 0 };
    observer.durableStep!({ ...durable, name: 'lookup', result: 'ran' });
    observer.durableStep!({ ...durable, name: 'lookup', result: 'replayed' });
    observer.durableStep!({ ...durable, name: 'lookup', result: 'replayed' });

    const m = exposition(await exporter.metrics());
    expect(m.type('orderly_events_total')).toBe('counter');
    expect(m.sum('orderly_events_total', { outcome: 'APPLIED' })).toBe(2);
    expect(m.sum('orderly_events_total', { outcome: 'DUPLICATE' })).toBe(1);
    expect(m.sum('orderly_events_total', { outcome: 'PARKED' })).toBe(1);
    // Every outcome is there from the start, at 0.
    expect(m.samples('orderly_events_total')).toHaveLength(Object.values(Outcome).length);
    expect(m.sum('orderly_events_total', { outcome: 'HELD' })).toBe(0);
    expect(m.sum('orderly_records_received_total')).toBe(7);
    expect(m.sum('orderly_redeliveries_total', { partition: 1 })).toBe(2);
    expect(m.samples('orderly_redeliveries_total', { partition: 0 })).toHaveLength(0);
    expect(m.sum('orderly_model_calls_total', { step: 'decide' })).toBe(4);
    expect(m.sum('orderly_rate_limited_total', { step: 'decide' })).toBe(1);
    expect(m.type('orderly_model_call_duration_seconds')).toBe('histogram');
    const answered = { step: 'decide', result: 'answered' };
    expect(m.sum('orderly_model_call_duration_seconds_count', answered)).toBe(2);
    expect(m.sum('orderly_model_call_duration_seconds_sum', answered)).toBe(6);
    expect(m.sum('orderly_model_call_duration_seconds_bucket', { ...answered, le: 2 })).toBe(0);
    expect(m.sum('orderly_model_call_duration_seconds_bucket', { ...answered, le: 4 })).toBe(2);
    expect(m.sum('orderly_model_call_duration_seconds_count', { result: 'failed' })).toBe(1);
    expect(m.sum('orderly_commits_total', { partition: 1 })).toBe(1);
    expect(m.sum('orderly_durable_steps_total', { step: 'decide', name: 'lookup', result: 'ran' })).toBe(1);
    expect(m.sum('orderly_durable_steps_total', { step: 'decide', name: 'lookup', result: 'replayed' })).toBe(2);
  });

  it('reads the gauges from the watched status at each scrape, and drops partitions no longer held', async () => {
    const exporter = new PrometheusExporter();
    let current: EngineStatus | undefined;
    exporter.watch(() => current);
    // No engine yet: no gauge series, still valid text.
    expect(exposition(await exporter.metrics()).samples('orderly_consumer_lag')).toHaveLength(0);

    current = status;
    let m = exposition(await exporter.metrics());
    expect(m.type('orderly_consumer_lag')).toBe('gauge');
    expect(m.sum('orderly_in_flight_events')).toBe(3);
    expect(m.sum('orderly_consumer_lag', { partition: 0 })).toBe(7);
    expect(m.sum('orderly_committed_offset', { partition: 0 })).toBe(5);
    expect(m.sum('orderly_high_watermark', { partition: 1 })).toBe(4);
    // Nothing committed yet by this worker: no lag is claimed for the partition.
    expect(m.samples('orderly_consumer_lag', { partition: 1 })).toHaveLength(0);
    expect(m.sum('orderly_parked_keys', { partition: 1 })).toBe(2);
    expect(m.sum('orderly_held_events', { partition: 1 })).toBe(5);
    expect(m.sum('orderly_rate_budget_calls', { step: 'decide', source: 'learned' })).toBe(6);
    expect(m.sum('orderly_rate_budget_window_seconds', { step: 'decide', source: 'learned' })).toBe(10);

    // A learned budget whose window is not known yet: the calls show, the window does not.
    current = { ...status, budgets: [{ step: 'decide', source: 'learned', calls: 4, windowMs: undefined }] };
    m = exposition(await exporter.metrics());
    expect(m.sum('orderly_rate_budget_calls', { step: 'decide', source: 'learned' })).toBe(4);
    expect(m.samples('orderly_rate_budget_window_seconds')).toHaveLength(0);

    current = { inFlight: 0, budgets: [], partitions: [status.partitions[1]!] };
    m = exposition(await exporter.metrics());
    expect(m.samples('orderly_parked_keys', { partition: 0 })).toHaveLength(0);
    expect(m.samples('orderly_consumer_lag', { partition: 0 })).toHaveLength(0);
    expect(m.sum('orderly_parked_keys', { partition: 1 })).toBe(2);
    expect(m.samples('orderly_rate_budget_calls')).toHaveLength(0);
  });

  it('lets several exporters share one registry, told apart by their labels', async () => {
    const registry = new Registry();
    const a = new PrometheusExporter({ registry, labels: { worker: 'a' } });
    const b = new PrometheusExporter({ registry, labels: { worker: 'b' } });
    a.observer().outcome!(outcome(Outcome.APPLIED, 0));
    b.observer().outcome!(outcome(Outcome.APPLIED, 0));
    b.observer().outcome!(outcome(Outcome.APPLIED, 1));
    a.update(status);
    b.update({ ...status, inFlight: 1 });
    const m = exposition(await registry.metrics());
    expect(m.sum('orderly_events_total', { worker: 'a', outcome: 'APPLIED' })).toBe(1);
    expect(m.sum('orderly_events_total', { worker: 'b', outcome: 'APPLIED' })).toBe(2);
    expect(m.sum('orderly_in_flight_events', { worker: 'a' })).toBe(3);
    expect(m.sum('orderly_in_flight_events', { worker: 'b' })).toBe(1);
  });
});

describe('serveMetrics', () => {
  it('serves the text at GET /metrics on loopback, and 404 elsewhere', async () => {
    const exporter = new PrometheusExporter();
    exporter.observer().outcome!(outcome(Outcome.APPLIED, 0));
    const server = await serveMetrics(exporter, { port: 0 });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const response = await fetch(server.url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/plain');
      expect(exposition(await response.text()).sum('orderly_events_total', { outcome: 'APPLIED' })).toBe(1);
      expect((await fetch(server.url.replace('/metrics', '/'))).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('names the address and the fix when the port is taken', async () => {
    const exporter = new PrometheusExporter();
    const first = await serveMetrics(exporter, { port: 0 });
    try {
      const port = Number(new URL(first.url).port);
      await expect(serveMetrics(exporter, { port })).rejects.toThrow(new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: .*--metrics-port`));
    } finally {
      await first.close();
    }
  });
});

describe('the exposition check of these tests', () => {
  it('refuses a sample without its TYPE, a family given twice, and a malformed line', () => {
    expect(() => exposition('orderly_x 1\n')).toThrow(/no TYPE/);
    expect(() => exposition('# TYPE a counter\na 1\n# TYPE a counter\na 2\n')).toThrow(/given twice/);
    expect(() => exposition('# TYPE a gauge\na{b="c" 1\n')).toThrow(/not a sample/);
    expect(exposition('# TYPE a gauge\na{b="c"} 1.5\n').sum('a', { b: 'c' })).toBe(1.5);
  });
});
