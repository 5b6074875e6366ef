import { stream } from '../../src/dsl/stream.js';
import { isRateLimited } from '../../src/dsl/rateLimited.js';
import type { Topology } from '../../src/dsl/topology.js';
import type { CommitPolicy } from '../../src/engine/engine.js';
import type { EngineStatus } from '../../src/engine/engineStatus.js';
import { Outcome, type EngineObserver } from '../../src/engine/outcomes.js';
import type { DecideFn } from '../../src/graph/nodes.js';
import { TopologyTestDriver } from '../driver.js';
import { fakeModel, type FakeModel } from '../fakeModel.js';
import { applyDecision, Decision, standInDecision, type Dispute } from './disputes.js';
import { runRetryTopicBaseline } from './retryTopicBaseline.js';
import {
  defaultWorkedExampleSettings,
  workedExampleEvents,
  workedExampleFixture,
  workedExampleLowerBoundMs,
  variantCommit,
  type WorkedExampleSettings,
  type WorkedExampleVariant,
} from './workedExampleSettings.js';
import type { VariantResult } from './variantResult.js';
import { keysByPartition, pausesAfterRateLimits, recordingModel, type TimelineMark, type WorkedExampleTimeline } from './workedExampleTimeline.js';

export {
  defaultWorkedExampleSettings,
  parseWorkedExampleSettings,
  workedExampleEvents,
  workedExampleFixture,
  workedExampleLowerBoundMs,
  workedExampleQuery,
  workedExampleVariants,
} from './workedExampleSettings.js';
export type { WorkedExampleSettings, WorkedExampleVariant } from './workedExampleSettings.js';
export type { VariantResult } from './variantResult.js';

/** Options of {@link runWorkedExample}. */
export interface WorkedExampleOptions {
  /** Keep the state in LevelDB here; without it, in memory-level. */
  readonly stateDir?: string;
  /** Settings other than the variant's defaults (see {@link WorkedExampleSettings}). */
  readonly settings?: Partial<Omit<WorkedExampleSettings, 'variant'>>;
  /** Hears the engine of a driver variant (a metrics exporter, say); `retry-topic` runs no engine. */
  readonly observer?: EngineObserver;
  /** Gets the engine's status once the variant is idle, before the driver closes. */
  readonly onIdle?: (status: EngineStatus) => void;
}

/** Runs one variant on the test driver (or, for `retry-topic`, on the naive baseline) and measures it. */
export async function runWorkedExample(variant: WorkedExampleVariant, options: WorkedExampleOptions = {}): Promise<VariantResult> {
  return (await runRecorded({ ...defaultWorkedExampleSettings(variant), ...options.settings, variant }, options)).result;
}

/** Runs the worked example with these settings, in memory, and returns its figures and its timeline. */
export async function runWorkedExampleTimeline(settings: WorkedExampleSettings): Promise<{ result: VariantResult; timeline: WorkedExampleTimeline }> {
  return runRecorded(settings, {});
}

async function runRecorded(
  s: WorkedExampleSettings,
  options: Omit<WorkedExampleOptions, 'settings'>,
): Promise<{ result: VariantResult; timeline: WorkedExampleTimeline }> {
  const events = workedExampleEvents(s);
  const recorded = recordingModel(disputesModel(s));
  const model = recorded.model;
  const timeline = (marks: TimelineMark[]): WorkedExampleTimeline => ({
    keysByPartition: keysByPartition(events, s.partitions),
    marks: [...recorded.calls, ...pausesAfterRateLimits(recorded.calls), ...marks],
    windowMs: s.windowMs,
  });
  if (s.variant === 'retry-topic') {
    const outcomes: TimelineMark[] = [];
    const result = await runRetryTopicBaseline(model, s, events, (mark) => outcomes.push(mark));
    return { result, timeline: timeline(outcomes) };
  }
  const driver = new TopologyTestDriver(workedExampleTopology(model, s), {
    partitions: s.partitions,
    commit: commitPolicy(s),
    seed: s.seed,
    ...(options.stateDir ? { stateDir: options.stateDir } : {}),
    ...(options.observer ? { observer: options.observer } : {}),
  });
  try {
    const input = driver.createInputTopic<Dispute>(workedExampleFixture.topic);
    for (const e of events) input.pipeInput(e.key, e.dispute, { partition: e.partition });
    const crashes = s.variant.startsWith('crash-');
    if (crashes) {
      driver.crash({ at: s.crashAtMs });
      driver.restart({ after: s.crashAtMs + s.restartAfterMs });
    }
    await driver.runUntilIdle();
    options.onIdle?.(driver.status());
    const marks: TimelineMark[] = [
      ...driver.history().map((h): TimelineMark => ({
        kind: 'outcome',
        partition: h.partition,
        offset: h.offset,
        key: h.key ?? '',
        atMs: h.atMs,
        outcome: h.outcome,
        ...(h.attempt !== undefined ? { attempt: h.attempt } : {}),
        ...(h.replayed ? { replayed: true } : {}),
      })),
      ...driver.redeliveries().map((r): TimelineMark => ({ kind: 'redelivery', partition: r.partition, offset: r.offset, key: r.key ?? '', atMs: r.atMs })),
      ...driver
        .commits()
        .filter((c) => c.topic === workedExampleFixture.topic)
        .map((c): TimelineMark => ({ kind: 'commit', partition: c.partition, offset: c.offset, atMs: c.atMs })),
      ...(crashes && driver.metrics().crashes > 0
        ? [{ kind: 'crash', atMs: s.crashAtMs } as const, { kind: 'restart', atMs: s.crashAtMs + s.restartAfterMs } as const]
        : []),
    ];
    return { result: measure(s, driver, model), timeline: timeline(marks) };
  } finally {
    await driver.close();
  }
}

function commitPolicy(s: WorkedExampleSettings): CommitPolicy {
  const commit = s.commit ?? variantCommit(s.variant);
  return commit === 'each' ? 'each' : { everyMs: commit };
}

function disputesModel(s: WorkedExampleSettings): FakeModel<Dispute, unknown> {
  return fakeModel<Dispute, unknown>({
    latencyMs: s.latencyMs,
    limit: { calls: s.callsPerWindow, windowMs: s.windowMs },
    poison: (d) => d.reason === 'unparseable',
    decide: (d) => standInDecision(d),
    seed: s.seed,
  });
}

/** The topology every driver variant runs; the variants differ in how the step meets a 429. */
export function workedExampleTopology(model: FakeModel<Dispute, unknown>, settings: WorkedExampleSettings): Topology {
  const s = settings;
  const decide = s.variant === 'immediate-retry' ? retryAtOnce(model.decide) : model.decide;
  return stream<Dispute>(workedExampleFixture.topic)
    .keyedSerial({ maxInFlight: s.maxInFlight })
    .agentStep('decide', decide, { schema: Decision, ...(s.variant === 'declared-limit' ? { limit: { calls: s.callsPerWindow, windowMs: s.windowMs } } : {}) })
    .park({ attempts: s.attempts, retryDelayMs: s.retryDelayMs })
    .applyOnce(applyDecision)
    .to('dispute-decisions')
    .build();
}

/** The usual mistake: a 429 is retried at once, inside the step. */
function retryAtOnce(decide: DecideFn<Dispute, unknown>): DecideFn<Dispute, unknown> {
  return async (event, ctx) => {
    for (;;) {
      try {
        return await decide(event, ctx);
      } catch (error) {
        if (!isRateLimited(error)) throw error;
      }
    }
  };
}

function measure(s: WorkedExampleSettings, driver: TopologyTestDriver, model: FakeModel<Dispute, unknown>): VariantResult {
  const history = driver.history();
  const metrics = driver.metrics();
  const distinct = (outcome: Outcome) => new Set(history.filter((h) => h.outcome === outcome).map((h) => h.effectId)).size;
  const finished = history.filter((h) => h.outcome !== Outcome.RETRY && h.outcome !== Outcome.RATE_LIMITED);
  const stats = model.stats();
  return {
    variant: s.variant,
    events: workedExampleEvents(s).length,
    held: distinct(Outcome.HELD),
    modelCalls: stats.accepted,
    rateLimitedResponses: stats.refused,
    wastedModelCalls: metrics.wastedModelCalls,
    endMs: Math.max(0, ...finished.map((h) => h.atMs)),
    lowerBoundMs: workedExampleLowerBoundMs(s),
    redelivered: metrics.redeliveries,
    redeliveredAlreadyApplied: metrics.duplicatesPrevented,
    doubleEffects: metrics.doubleEffects,
    orderViolations: metrics.orderViolations,
    parked: distinct(Outcome.PARKED),
  };
}
