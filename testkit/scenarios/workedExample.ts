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

/** The worked example's fixed numbers: 3 partitions of 8 events, a model of 6 calls per 10 s at 4 s each. */
export const workedExampleFixture = {
  topic: 'disputes',
  partitions: 3,
  limit: { calls: 6, windowMs: 10_000 },
  latencyMs: 4_000,
  maxInFlight: 3,
  attempts: 3,
  retryDelayMs: 1_000,
  crashAtMs: 25_000,
  restartAfterMs: 5_000,
  commitEveryMs: 5_000,
  /** The accounts of each partition's events, in offset order. Event 2 of partition 1 is poison. */
  keys: [
    ['acct-01', 'acct-02', 'acct-03', 'acct-01', 'acct-04', 'acct-02', 'acct-05', 'acct-03'],
    ['acct-11', 'acct-12', 'acct-13', 'acct-11', 'acct-13', 'acct-14', 'acct-13', 'acct-12'],
    ['acct-21', 'acct-22', 'acct-23', 'acct-24', 'acct-21', 'acct-25', 'acct-22', 'acct-26'],
  ],
  poison: { partition: 1, offset: 2 },
} as const;

export const workedExampleVariants = ['retry-after', 'crash-interval-commit', 'crash-commit-each', 'immediate-retry', 'retry-topic', 'declared-limit'] as const;
export type WorkedExampleVariant = (typeof workedExampleVariants)[number];

/** One variant's figures. */
export interface VariantResult {
  readonly variant: WorkedExampleVariant;
  readonly events: number;
  readonly held: number;
  /** Calls the provider accepted. */
  readonly modelCalls: number;
  readonly rateLimitedResponses: number;
  /** Calls for events whose effect was already recorded. */
  readonly wastedModelCalls: number;
  /** Virtual ms when the last event finished. */
  readonly endMs: number;
  readonly lowerBoundMs: number;
  readonly redelivered: number;
  readonly redeliveredAlreadyApplied: number;
  readonly doubleEffects: number;
  readonly orderViolations: number;
  readonly parked: number;
}

/** The fixture's events, as piped: partition, offset, key and dispute. */
export function workedExampleEvents(): Array<{ partition: number; offset: number; key: string; dispute: Dispute }> {
  const { keys, poison } = workedExampleFixture;
  return keys.flatMap((partitionKeys, partition) =>
    partitionKeys.map((account, offset) => ({
      partition,
      offset,
      key: account,
      dispute: {
        disputeId: `d-${partition}-${offset}`,
        account,
        amount: 20 + 15 * offset,
        reason: partition === poison.partition && offset === poison.offset ? 'unparseable' : offset % 3 === 0 ? 'fraud' : 'not-received',
      },
    })),
  );
}

/**
 * The least virtual time any schedule can finish in: every call that must be accepted (one per
 * event that is neither poison nor held, plus the poison's attempts) fits in windows of
 * `calls`, and the last window's calls take `latencyMs`.
 */
export function workedExampleLowerBoundMs(): number {
  const f = workedExampleFixture;
  const events = f.keys.flat().length;
  const poisonKey = f.keys[f.poison.partition]![f.poison.offset]!;
  const held = f.keys[f.poison.partition]!.filter((k, offset) => k === poisonKey && offset > f.poison.offset).length;
  const calls = events - 1 - held + f.attempts;
  return (Math.ceil(calls / f.limit.calls) - 1) * f.limit.windowMs + f.latencyMs;
}

/** Options of {@link runWorkedExample}. */
export interface WorkedExampleOptions {
  /** Keep the LevelDB state here (default: memory). */
  readonly stateDir?: string;
  /** Hears the engine of a driver variant (a metrics exporter, say); `retry-topic` runs no engine. */
  readonly observer?: EngineObserver;
  /** Gets the engine's status once the variant is idle, before the driver closes. */
  readonly onIdle?: (status: EngineStatus) => void;
}

/** Runs one variant on the test driver (or, for `retry-topic`, on the naive baseline) and measures it. */
export async function runWorkedExample(variant: WorkedExampleVariant, options: WorkedExampleOptions = {}): Promise<VariantResult> {
  const model = disputesModel();
  if (variant === 'retry-topic') return runRetryTopicBaseline(model, variant);
  const f = workedExampleFixture;
  const commit: CommitPolicy = variant === 'crash-commit-each' ? 'each' : { everyMs: f.commitEveryMs };
  const driver = new TopologyTestDriver(workedExampleTopology(model, variant), {
    partitions: f.partitions,
    commit,
    ...(options.stateDir ? { stateDir: options.stateDir } : {}),
    ...(options.observer ? { observer: options.observer } : {}),
  });
  try {
    const input = driver.createInputTopic<Dispute>(f.topic);
    for (const e of workedExampleEvents()) input.pipeInput(e.key, e.dispute, { partition: e.partition });
    if (variant.startsWith('crash-')) {
      driver.crash({ at: f.crashAtMs });
      driver.restart({ after: f.crashAtMs + f.restartAfterMs });
    }
    await driver.runUntilIdle();
    options.onIdle?.(driver.status());
    return measure(variant, driver, model);
  } finally {
    await driver.close();
  }
}

function disputesModel(): FakeModel<Dispute, unknown> {
  const f = workedExampleFixture;
  return fakeModel<Dispute, unknown>({
    latencyMs: f.latencyMs,
    limit: f.limit,
    poison: (d) => d.reason === 'unparseable',
    decide: (d) => standInDecision(d),
  });
}

/** The topology every driver variant runs; the variants differ in how the step meets a 429. */
export function workedExampleTopology(model: FakeModel<Dispute, unknown>, variant: WorkedExampleVariant): Topology {
  const f = workedExampleFixture;
  const decide = variant === 'immediate-retry' ? retryAtOnce(model.decide) : model.decide;
  return stream<Dispute>(f.topic)
    .keyedSerial({ maxInFlight: f.maxInFlight })
    .agentStep('decide', decide, { schema: Decision, ...(variant === 'declared-limit' ? { limit: f.limit } : {}) })
    .park({ attempts: f.attempts, retryDelayMs: f.retryDelayMs })
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

function measure(variant: WorkedExampleVariant, driver: TopologyTestDriver, model: FakeModel<Dispute, unknown>): VariantResult {
  const history = driver.history();
  const metrics = driver.metrics();
  const distinct = (outcome: Outcome) => new Set(history.filter((h) => h.outcome === outcome).map((h) => h.effectId)).size;
  const finished = history.filter((h) => h.outcome !== Outcome.RETRY && h.outcome !== Outcome.RATE_LIMITED);
  const stats = model.stats();
  return {
    variant,
    events: workedExampleEvents().length,
    held: distinct(Outcome.HELD),
    modelCalls: stats.accepted,
    rateLimitedResponses: stats.refused,
    wastedModelCalls: metrics.wastedModelCalls,
    endMs: Math.max(0, ...finished.map((h) => h.atMs)),
    lowerBoundMs: workedExampleLowerBoundMs(),
    redelivered: metrics.redeliveries,
    redeliveredAlreadyApplied: metrics.duplicatesPrevented,
    doubleEffects: metrics.doubleEffects,
    orderViolations: metrics.orderViolations,
    parked: distinct(Outcome.PARKED),
  };
}
