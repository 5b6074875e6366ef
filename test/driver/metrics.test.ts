import { describe, expect, it } from 'vitest';
import { sleep } from '../../src/ports/clock.js';
import type { DecideContext } from '../../src/graph/nodes.js';
import { PrometheusExporter } from '../../src/metrics/index.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { workedExampleVariants, type VariantResult } from '../../testkit/scenarios/workedExample.js';
import { orderlyCli } from '../unit/cli/orderlyCli.js';
import { exposition } from '../unit/metrics/exposition.js';
import { decisionTopology, type Ev } from './helpers.js';

describe('./bin/orderly scenario worked-example --metrics', () => {
  it('prints valid Prometheus text whose figures agree with each variant’s --json row', async () => {
    const [metrics, json] = await Promise.all([orderlyCli(['scenario', 'worked-example', '--metrics']), orderlyCli(['scenario', 'worked-example', '--json'])]);
    expect([metrics.code, metrics.stderr, json.code, json.stderr]).toEqual([0, '', 0, '']);
    const m = exposition(metrics.stdout);
    const rows = JSON.parse(json.stdout) as VariantResult[];
    expect(rows.map((r) => r.variant)).toEqual([...workedExampleVariants]);
    const driverRows = rows.filter((r) => r.variant !== 'retry-topic');
    expect(driverRows).toHaveLength(5);
    for (const row of driverRows) {
      const variant = { variant: row.variant };
      const events = (outcome: string) => m.sum('orderly_events_total', { ...variant, outcome });
      // Every event finishes once (applied, parked or held); a redelivered one already applied is a DUPLICATE.
      expect(events('APPLIED') + events('PARKED') + events('HELD'), row.variant).toBe(row.events);
      expect(events('PARKED'), row.variant).toBe(row.parked);
      expect(events('HELD'), row.variant).toBe(row.held);
      expect(events('DUPLICATE'), row.variant).toBe(row.redeliveredAlreadyApplied);
      expect(m.sum('orderly_parked_keys', variant), row.variant).toBe(row.parked);
      expect(m.sum('orderly_held_events', variant), row.variant).toBe(row.held);
      expect(m.sum('orderly_redeliveries_total', variant), row.variant).toBe(row.redelivered);
      expect(m.samples('orderly_consumer_lag', variant), row.variant).toHaveLength(3);
      expect(m.sum('orderly_consumer_lag', variant), row.variant).toBe(0);
      expect(m.sum('orderly_in_flight_events', variant), row.variant).toBe(0);
      if (row.variant === 'immediate-retry') {
        // Its decide retries 429s inside itself: the engine sees neither those calls nor the 429s.
        expect(m.sum('orderly_rate_limited_total', variant)).toBe(0);
        expect(row.rateLimitedResponses).toBeGreaterThan(0);
        continue;
      }
      expect(m.sum('orderly_rate_limited_total', variant), row.variant).toBe(row.rateLimitedResponses);
      // The row counts the calls the provider accepted; the metric counts every call started.
      expect(m.sum('orderly_model_calls_total', variant) - m.sum('orderly_rate_limited_total', variant), row.variant).toBe(row.modelCalls);
      expect(m.sum('orderly_model_call_duration_seconds_count', { ...variant, result: 'answered' }), row.variant).toBe(row.modelCalls);
    }
    // The declared limit shows as the budget; the others learn it from the 429s.
    expect(m.sum('orderly_rate_budget_calls', { variant: 'declared-limit', source: 'declared' })).toBe(6);
    expect(m.sum('orderly_rate_budget_calls', { variant: 'retry-after', source: 'learned' })).toBeGreaterThan(0);
    expect(m.samples('orderly_events_total', { variant: 'retry-topic' })).toHaveLength(0);
  });
});

describe('orderly_consumer_lag on the driver', () => {
  it("follows the driver log's high watermark and the committed offset of each partition", async () => {
    const exporter = new PrometheusExporter();
    const decide = async (e: Ev, ctx: DecideContext) => {
      await sleep(ctx.clock, 1_000, ctx.signal);
      return { action: e.bad ? 'reject' : 'refund' };
    };
    const driver = new TopologyTestDriver(decisionTopology(decide), { partitions: 2, commit: { everyMs: 5_000 }, observer: exporter.observer() });
    try {
      const input = driver.createInputTopic<Ev>('events');
      for (let i = 0; i < 4; i++) input.pipeInput('a', { id: `a${i}` }, { partition: 0 });
      input.pipeInput('b', { id: 'b0' }, { partition: 1 });
      const scrape = async () => {
        exporter.update(driver.status());
        return exposition(await exporter.metrics());
      };

      // At 5 s the first commit: partition 0 has finished a0..a3 (one a second), partition 1 b0.
      await driver.advanceWallClockTime(3_500);
      let m = await scrape();
      expect(m.sum('orderly_high_watermark', { partition: 0 })).toBe(4);
      expect(m.sum('orderly_high_watermark', { partition: 1 })).toBe(1);
      expect(m.samples('orderly_consumer_lag')).toHaveLength(0); // nothing committed yet: no lag claimed
      await driver.advanceWallClockTime(2_000);
      m = await scrape();
      expect(m.sum('orderly_committed_offset', { partition: 0 })).toBe(4);
      expect(m.sum('orderly_consumer_lag')).toBe(0);

      // New records raise the lag at once (the high watermark is the log's end), until committed.
      input.pipeInput('a', { id: 'a4' }, { partition: 0 });
      input.pipeInput('a', { id: 'a5' }, { partition: 0 });
      m = await scrape();
      expect(m.sum('orderly_high_watermark', { partition: 0 })).toBe(6);
      expect(m.sum('orderly_consumer_lag', { partition: 0 })).toBe(2);
      expect(m.sum('orderly_consumer_lag', { partition: 1 })).toBe(0);
      await driver.runUntilIdle();
      m = await scrape();
      expect(m.sum('orderly_consumer_lag')).toBe(0);
      expect(m.sum('orderly_committed_offset', { partition: 0 })).toBe(6);
    } finally {
      await driver.close();
    }
  });
});
