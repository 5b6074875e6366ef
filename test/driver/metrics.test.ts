import { describe, expect, it } from 'vitest';
import { scenarioMetrics } from '../../src/cli/scenarioMetrics.js';
import { runWorkedExample, workedExampleVariants, type VariantResult } from '../../testkit/scenarios/workedExample.js';
import { exposition } from '../unit/metrics/exposition.js';

describe('scenario worked-example --metrics', () => {
  it('prints valid Prometheus text whose figures agree with each variant’s JSON row', async () => {
    const m = exposition(await scenarioMetrics(() => ({})));
    const rows: VariantResult[] = [];
    for (const variant of workedExampleVariants) rows.push(await runWorkedExample(variant));
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
