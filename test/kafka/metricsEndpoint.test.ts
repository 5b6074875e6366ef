// Issue 12 §5: `orderly run --metrics-port` serves Prometheus metrics that follow the run.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { exposition } from '../unit/metrics/exposition.js';
import { createTopic, produce, readUntil } from './kafkaClient.js';
import { asInput, decided, disputes, scenario } from './disputes.js';
import { Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

async function scrape(url: string) {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return exposition(await response.text());
}

describe('orderly run --metrics-port: /metrics on the broker', () => {
  it('serves outcomes, model calls, parked keys, held events and per-partition lag that agree with the run', async () => {
    const { prefix, group, stateDir } = await scenario('metrics');
    // Dispute 5 is poison: its account's later disputes are held behind it.
    const inputs = disputes(30, 6, (i) => (i === 5 ? 'unparseable' : 'not-received'));
    const poison = inputs[5]!;
    const held = inputs.slice(6).filter((d) => d.account === poison.account).length;
    const applied = inputs.length - 1 - held;
    await createTopic(bootstrap, `${prefix}disputes`, 2);
    await produce(bootstrap, `${prefix}disputes`, inputs.map(asInput));
    const worker = new Worker({ bootstrap, group, stateDir, topicPrefix: prefix, args: ['--metrics-port', '0'], env: { ORDERLY_MODEL_LATENCY_MS: '200' } });
    workers.push(worker);
    await worker.waitFor('metrics served', (lines) => lines.some((l) => l.msg === 'metrics served'));
    const url = String(worker.lines.find((l) => l.msg === 'metrics served')!.url);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);

    // Scraped while the worker runs, until every event has finished and been committed.
    const deadline = Date.now() + 90_000;
    let m = await scrape(url);
    const finished = () => ['APPLIED', 'PARKED', 'HELD'].reduce((n, outcome) => n + m.sum('orderly_events_total', { outcome }), 0);
    while (finished() < inputs.length || m.samples('orderly_consumer_lag').length < 2 || m.sum('orderly_consumer_lag') > 0) {
      if (Date.now() > deadline)
        throw new Error(
          `metrics did not reach the end of the run: ${finished()} of ${inputs.length} finished, lag ${m.sum('orderly_consumer_lag')}\n${worker.tail()}`,
        );
      await sleep(250);
      m = await scrape(url);
    }
    await readUntil(bootstrap, `${prefix}dispute-decisions`, (r) => decided(r) >= applied, {
      timeoutMs: 30_000,
      describe: (r) => `${decided(r)} of ${applied} decided\n${worker.stuck()}`,
    });

    expect(m.sum('orderly_events_total', { outcome: 'APPLIED' })).toBe(applied);
    expect(m.sum('orderly_events_total', { outcome: 'PARKED' })).toBe(1);
    expect(m.sum('orderly_events_total', { outcome: 'HELD' })).toBe(held);
    expect(m.sum('orderly_events_total', { outcome: 'RETRY' })).toBe(2);
    expect(m.sum('orderly_parked_keys')).toBe(1);
    expect(m.sum('orderly_held_events')).toBe(held);
    // One call per applied event and three for the poison; the stand-in model never answers 429.
    expect(m.sum('orderly_model_calls_total', { step: 'decide' })).toBe(applied + 3);
    expect(m.sum('orderly_model_call_duration_seconds_count', { step: 'decide', result: 'answered' })).toBe(applied + 3);
    expect(m.sum('orderly_model_call_duration_seconds_sum', { step: 'decide' })).toBeGreaterThanOrEqual(((applied + 3) * 200) / 1000);
    expect(m.sum('orderly_rate_limited_total', { step: 'decide' })).toBe(0);
    expect(m.sum('orderly_records_received_total')).toBe(inputs.length);
    expect(m.sum('orderly_redeliveries_total')).toBe(0);
    // Both partitions: the broker's high watermarks add up to the inputs, all committed.
    expect(m.samples('orderly_high_watermark')).toHaveLength(2);
    expect(m.sum('orderly_high_watermark', { topic: `${prefix}disputes` })).toBe(inputs.length);
    expect(m.sum('orderly_committed_offset', { topic: `${prefix}disputes` })).toBe(inputs.length);
    expect(m.sum('orderly_in_flight_events')).toBe(0);

    // More input raises the lag until it is committed.
    const more = disputes(40, 6).slice(30);
    await produce(bootstrap, `${prefix}disputes`, more.map(asInput));
    while (m.sum('orderly_high_watermark') < inputs.length + more.length || m.sum('orderly_consumer_lag') > 0) {
      if (Date.now() > deadline + 30_000) throw new Error(`the high watermarks did not follow: ${m.sum('orderly_high_watermark')}\n${worker.tail()}`);
      await sleep(250);
      m = await scrape(url);
    }
    expect(m.sum('orderly_committed_offset')).toBe(inputs.length + more.length);

    expect(await worker.stop()).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
  });
});
