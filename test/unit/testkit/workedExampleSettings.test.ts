import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { runWorkedExample, runWorkedExampleTimeline } from '../../../testkit/scenarios/workedExample.js';
import {
  defaultWorkedExampleSettings,
  parseWorkedExampleSettings,
  workedExampleEvents,
  workedExampleFixture,
  workedExampleLowerBoundMs,
  workedExampleQuery,
  workedExampleVariants,
  type WorkedExampleSettings,
} from '../../../testkit/scenarios/workedExampleSettings.js';

describe('worked example settings', () => {
  it('at the defaults, are the fixture: its events, its lower bound, and a query of the variant alone', () => {
    const settings = defaultWorkedExampleSettings('crash-commit-each');
    expect(workedExampleEvents(settings).map((e) => e.key)).toEqual(workedExampleFixture.keys.flat());
    expect(
      workedExampleEvents(settings)
        .filter((e) => e.dispute.reason === 'unparseable')
        .map((e) => [e.partition, e.offset]),
    ).toEqual([[1, 2]]);
    expect(workedExampleLowerBoundMs(settings)).toBe(34_000);
    expect(workedExampleQuery(settings).toString()).toBe('variant=crash-commit-each');
    expect(parseWorkedExampleSettings(new URLSearchParams('variant=crash-commit-each'))).toEqual(settings);
  });

  it('go through the URL query and back unchanged', () => {
    const settings: WorkedExampleSettings = { ...defaultWorkedExampleSettings('retry-topic'), partitions: 2, latencyMs: 1_500, commit: 'each', seed: 9 };
    const query = workedExampleQuery(settings);
    expect(query.toString()).toBe('variant=retry-topic&partitions=2&latencyMs=1500&seed=9&commit=each');
    expect(parseWorkedExampleSettings(query)).toEqual(settings);
    expect(parseWorkedExampleSettings(new URLSearchParams('commit=2500')).commit).toBe(2_500);
  });

  it('name the setting, the value and what is allowed when a value is wrong', () => {
    const parse = (query: string) => () => parseWorkedExampleSettings(new URLSearchParams(query));
    expect(parse('variant=fast')).toThrow(
      "worked example: no variant 'fast'; use one of retry-after, crash-interval-commit, crash-commit-each, immediate-retry, retry-topic, declared-limit",
    );
    expect(parse('partitions=0')).toThrow("worked example: partitions must be a whole number from 1 to 8, got '0'");
    expect(parse('latencyMs=1.5')).toThrow("worked example: latencyMs must be a whole number from 0 to 60000, got '1.5'");
    expect(parse('commit=sometimes')).toThrow("worked example: commit must be 'each' or a whole number of ms from 1 to 600000, got 'sometimes'");
  });

  it('off the fixture, draw the events from the seed: the same seed, the same events', () => {
    const settings = { ...defaultWorkedExampleSettings(), partitions: 2, eventsPerPartition: 6, keysPerPartition: 3, poisonEvents: 2, seed: 7 };
    const events = workedExampleEvents(settings);
    expect(events).toHaveLength(12);
    expect(events.filter((e) => e.dispute.reason === 'unparseable')).toHaveLength(2);
    expect(new Set(events.map((e) => e.key)).size).toBeLessThanOrEqual(6);
    expect(workedExampleEvents(settings)).toEqual(events);
    expect(workedExampleEvents({ ...settings, seed: 8 })).not.toEqual(events);
  });
});

describe('the worked example with other settings', () => {
  const settings = fc.record({
    variant: fc.constantFrom(...workedExampleVariants),
    partitions: fc.integer({ min: 1, max: 3 }),
    eventsPerPartition: fc.integer({ min: 1, max: 10 }),
    keysPerPartition: fc.integer({ min: 1, max: 4 }),
    poisonEvents: fc.integer({ min: 0, max: 2 }),
    maxInFlight: fc.integer({ min: 1, max: 4 }),
    callsPerWindow: fc.integer({ min: 1, max: 8 }),
    windowMs: fc.integer({ min: 1, max: 10 }).map((s) => s * 1_000),
    latencyMs: fc.integer({ min: 0, max: 5_000 }),
    attempts: fc.integer({ min: 1, max: 3 }),
    retryDelayMs: fc.integer({ min: 0, max: 2_000 }),
    commit: fc.constantFrom(undefined, 'each' as const, 2_000),
    crashAtMs: fc.integer({ min: 0, max: 30_000 }),
    restartAfterMs: fc.integer({ min: 0, max: 5_000 }),
    seed: fc.integer({ min: 0, max: 1_000 }),
  });

  it('keeps the guarantees and never beats the lower bound; the timeline shows every accepted call and 429', async () => {
    await fc.assert(
      fc.asyncProperty(settings, async (s) => {
        const { result, timeline } = await runWorkedExampleTimeline(s);
        expect(result.events).toBe(s.partitions * s.eventsPerPartition);
        expect(result.lowerBoundMs).toBe(workedExampleLowerBoundMs(s));
        expect(result.endMs).toBeGreaterThanOrEqual(result.lowerBoundMs);
        expect(result.doubleEffects).toBe(0);
        if (s.variant !== 'retry-topic') expect(result.orderViolations).toBe(0);
        const calls = timeline.marks.filter((m) => m.kind === 'call');
        expect(calls.filter((c) => c.result !== 'rate-limited')).toHaveLength(result.modelCalls);
        expect(calls.filter((c) => c.result === 'rate-limited')).toHaveLength(result.rateLimitedResponses);
        // The same settings through runWorkedExample give the same figures.
        const { variant, ...rest } = s;
        expect(await runWorkedExample(variant, { settings: rest })).toEqual(result);
      }),
      { numRuns: 25, seed: 14 },
    );
  });

  it('draws the crash, the restart and the redeliveries of a crash variant', async () => {
    const { result, timeline } = await runWorkedExampleTimeline(defaultWorkedExampleSettings('crash-interval-commit'));
    expect(timeline.marks.filter((m) => m.kind === 'crash' || m.kind === 'restart')).toEqual([
      { kind: 'crash', atMs: 25_000 },
      { kind: 'restart', atMs: 30_000 },
    ]);
    expect(timeline.marks.filter((m) => m.kind === 'redelivery')).toHaveLength(result.redelivered);
    const commits = timeline.marks.filter((m) => m.kind === 'commit');
    expect(commits.length).toBeGreaterThan(0);
    expect(commits.every((c) => c.atMs !== 25_000)).toBe(true);
  });
});
