import { sameJson } from '../../src/dsl/sameJson.js';
import { stream } from '../../src/dsl/stream.js';
import { EFFECT_ID_HEADER } from '../../src/engine/outputs.js';
import type { Topology } from '../../src/dsl/topology.js';
import type { ShadowRecord } from '../../src/engine/shadowRecords.js';
import { Outcome } from '../../src/engine/outcomes.js';
import type { EngineObserver } from '../../src/engine/outcomes.js';
import type { DecidedBy } from '../../src/graph/nodes.js';
import { TopologyTestDriver } from '../driver.js';
import { fakeModel, type FakeModel } from '../fakeModel.js';
import { applyDecision, Decision, standInDecision, type Dispute } from './disputes.js';
import { defaultWorkedExampleSettings, variantCommit, workedExampleEvents, workedExampleFixture } from './workedExampleSettings.js';

/** The ways a team moves a decision to an agent step, each run by `orderly scenario migration`. */
export const migrationModes = ['agent', 'rules-first', 'shadow', 'fallback'] as const;
export type MigrationMode = (typeof migrationModes)[number];

/** The migration's own numbers, beside the worked example's fixture (events, model, limit, park). */
export const migrationFixture = {
  /** In `fallback`, the model refuses every call (a 429 with Retry-After 1 s) from 10 s to 20 s of virtual time. */
  down: { fromMs: 10_000, toMs: 20_000, retryAfterMs: 1_000 },
  /**
   * The fallback's circuit opens after 5 s of refusals with no answer: longer than the 3.9 s from
   * a window's first 429 to the answers of the calls it admitted (4 s each), so an ordinary rate
   * limit never opens it.
   */
  fallbackAfterMs: 5_000,
} as const;

/** One mode's figures: every one measured by the run. */
export interface MigrationRow {
  readonly mode: MigrationMode;
  readonly events: number;
  /** Calls the model accepted (as the worked example counts them). */
  readonly modelCalls: number;
  /** Events applied with the step's decision made by a rule: a route's, or the handler a shadow applies. */
  readonly decidedByRule: number;
  readonly decidedByAgent: number;
  readonly decidedByFallback: number;
  /** Shadow records whose agent decision disagreed with the applied one. */
  readonly shadowDisagreements: number;
  /** Disputes whose applied decision (read from `dispute-decisions`) is the agent's decision of a disagreeing shadow record. */
  readonly shadowApplied: number;
  /** Virtual ms when the last event finished. */
  readonly endMs: number;
  readonly doubleEffects: number;
  readonly orderViolations: number;
  readonly parked: number;
}

/** Options of {@link runMigration}. */
export interface MigrationOptions {
  /** Keep the state in LevelDB here; without it, in memory-level. */
  readonly stateDir?: string;
  readonly observer?: EngineObserver;
}

/** The rule that decides routine disputes in `rules-first`: an undelivered item of 50 or less is refunded. */
export function routineDecision(dispute: Dispute): Decision | undefined {
  if (dispute.reason === 'not-received' && dispute.amount <= 50)
    return { action: 'refund', rationale: `not received, amount ${dispute.amount}: refunded by rule` };
  return undefined;
}

/** The code the agent replaces, applied in `shadow` and deciding in `fallback`: small amounts refunded, everything else to a person. */
export function legacyDecision(dispute: Dispute): Decision {
  if (dispute.reason !== 'fraud' && dispute.amount <= 50) return { action: 'refund', rationale: `amount ${dispute.amount}: refunded by the old rules` };
  return { action: 'escalate', rationale: 'the old rules send it to a person' };
}

/** Two decisions agree when their actions do (the rationales are worded differently). */
const sameAction = (agent: Decision, applied: Decision) => agent.action === applied.action;

/** The topology of one mode: the worked example's, with the adoption operator the mode adds. */
export function migrationTopology(mode: MigrationMode, model: FakeModel<Dispute, unknown>): Topology {
  const f = workedExampleFixture;
  const keyed = stream<Dispute>(f.topic).keyedSerial({ maxInFlight: f.maxInFlight });
  const routed = mode === 'rules-first' ? keyed.route('routine', (d) => routineDecision(d)) : keyed;
  const parked = routed.agentStep('decide', model.decide, { schema: Decision }).park({ attempts: f.attempts, retryDelayMs: f.retryDelayMs });
  const adopted =
    mode === 'shadow'
      ? parked.shadow('legacy', (d) => legacyDecision(d), { agrees: sameAction })
      : mode === 'fallback'
        ? parked.fallback('legacy', (d) => legacyDecision(d), { afterMs: migrationFixture.fallbackAfterMs })
        : parked;
  return adopted.applyOnce(applyDecision).to('dispute-decisions').build();
}

/** Runs one mode on the test driver over the worked example's events and measures it. */
export async function runMigration(mode: MigrationMode, options: MigrationOptions = {}): Promise<MigrationRow> {
  const s = defaultWorkedExampleSettings();
  const model = fakeModel<Dispute, unknown>({
    latencyMs: s.latencyMs,
    limit: { calls: s.callsPerWindow, windowMs: s.windowMs },
    poison: (d) => d.reason === 'unparseable',
    decide: (d) => standInDecision(d),
    seed: s.seed,
    ...(mode === 'fallback' ? { down: migrationFixture.down } : {}),
  });
  const events = workedExampleEvents(s);
  const driver = new TopologyTestDriver(migrationTopology(mode, model), {
    partitions: s.partitions,
    commit: { everyMs: variantCommit('retry-after') as number },
    seed: s.seed,
    ...(options.stateDir ? { stateDir: options.stateDir } : {}),
    ...(options.observer ? { observer: options.observer } : {}),
  });
  try {
    const input = driver.createInputTopic<Dispute>(workedExampleFixture.topic);
    for (const e of events) input.pipeInput(e.key, e.dispute, { partition: e.partition });
    await driver.runUntilIdle();
    return measure(mode, driver, model, events.length);
  } finally {
    await driver.close();
  }
}

/** Every mode, in order. */
export async function runMigrations(optionsOf: (mode: MigrationMode) => MigrationOptions = () => ({})): Promise<MigrationRow[]> {
  const rows: MigrationRow[] = [];
  for (const mode of migrationModes) rows.push(await runMigration(mode, optionsOf(mode)));
  return rows;
}

function measure(mode: MigrationMode, driver: TopologyTestDriver, model: FakeModel<Dispute, unknown>, events: number): MigrationRow {
  const history = driver.history();
  const finished = history.filter((h) => h.outcome !== Outcome.RETRY && h.outcome !== Outcome.RATE_LIMITED);
  const decidedBy = (by: DecidedBy) => new Set(history.filter((h) => h.outcome === Outcome.APPLIED && h.decidedBy?.decide === by).map((h) => h.effectId)).size;
  const shadows = mode === 'shadow' ? driver.createOutputTopic<ShadowRecord>(`${workedExampleFixture.topic}.shadow`).readValuesToList() : [];
  const disagreeing = new Map(shadows.filter((r) => r.agrees === false).map((r) => [r.effectId, r]));
  const applied = driver.createOutputTopic<{ disputeId: string } & Decision>('dispute-decisions').readRecordsToList();
  const shadowApplied = new Set(
    applied
      .filter((record) => {
        const shadow = disagreeing.get(record.headers[EFFECT_ID_HEADER] ?? '');
        const { action, rationale } = record.value;
        return shadow !== undefined && sameJson({ action, rationale }, shadow.agent);
      })
      .map((record) => record.value.disputeId),
  ).size;
  const metrics = driver.metrics();
  return {
    mode,
    events,
    modelCalls: model.stats().accepted,
    decidedByRule: decidedBy('rule'),
    decidedByAgent: decidedBy('agent'),
    decidedByFallback: decidedBy('fallback'),
    shadowDisagreements: disagreeing.size,
    shadowApplied,
    endMs: Math.max(0, ...finished.map((h) => h.atMs)),
    doubleEffects: metrics.doubleEffects,
    orderViolations: metrics.orderViolations,
    parked: new Set(history.filter((h) => h.outcome === Outcome.PARKED).map((h) => h.effectId)).size,
  };
}
