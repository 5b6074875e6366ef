import { Outcome } from '../src/engine/outcomes.js';
import type { ScenarioRun } from './crashScenario.js';
import { checkRetryAfter } from './retryAfterCheck.js';
import type { InvariantViolation } from './violations.js';

export type { InvariantViolation } from './violations.js';

/**
 * Checks every guarantee on a finished crash-scenario run, against what the driver saw from
 * outside the engine (the store's batches, the log's commits and deliveries), not the engine's word.
 * Returns the violations; none means the run kept every promise.
 */
export function checkCrashScenario(run: ScenarioRun): InvariantViolation[] {
  return [
    ...checkSafety(run),
    // The rate-limited provider is the 'decide' step's; a two-step scenario's 'classify' calls another.
    ...checkRetryAfter(
      run.driver.modelCalls().filter((c) => c.step === 'decide'),
      run.model.stats(),
    ),
    // Checked as the run went, after every crash and at its end: the state against the effects recorded.
    ...run.stateViolations,
    ...checkParkedBeforeResolutions(run),
    ...checkConvergence(run),
  ];
}

/** Throws with every violation and the scenario, ready to paste into a test. */
export function assertCrashScenario(run: ScenarioRun): void {
  const violations = checkCrashScenario(run);
  if (violations.length > 0) {
    throw new Error(`${violations.map((v) => `${v.invariant}: ${v.detail}`).join('\n')}\nscenario: ${JSON.stringify(run.scenario)}`);
  }
}

function checkSafety({ driver }: ScenarioRun): InvariantViolation[] {
  const breaches = driver.observedBreaches();
  const m = driver.metrics();
  const found: InvariantViolation[] = [];
  if (m.orderViolations > 0)
    found.push({ invariant: 'order-violation', detail: `${m.orderViolations} effects applied while an earlier event of their key was unfinished or parked` });
  if (m.doubleEffects > 0) found.push({ invariant: 'double-effect', detail: `${m.doubleEffects} effect ids recorded twice` });
  if (m.wastedModelCalls > 0) found.push({ invariant: 'wasted-model-call', detail: `${m.wastedModelCalls} model calls for events whose effect was recorded` });
  if (m.unrecordedAttempts > 0)
    found.push({ invariant: 'attempt-unrecorded', detail: `${m.unrecordedAttempts} calls of a step's next attempt before the last one was recorded` });
  if (m.commitsPastUnfinished > 0) found.push({ invariant: 'commit-past-unfinished', detail: `${m.commitsPastUnfinished} commits passed an unfinished event` });
  if (m.stepsRunAgain > 0)
    found.push({
      invariant: 'step-run-again',
      detail: `${m.stepsRunAgain} runs of a durable step after its journal entry was durable: ${breaches.stepRunAgain.join('; ')}`,
    });
  return found;
}

/** Before any resolution: each poison event parked, the later events of its key held, the others applied. */
function checkParkedBeforeResolutions(run: ScenarioRun): InvariantViolation[] {
  const history = run.driver.history().slice(0, run.beforeResolutions);
  const outcomesOf = new Map<string, Set<Outcome>>();
  for (const h of history) {
    if (h.replayed) continue;
    let set = outcomesOf.get(h.effectId);
    if (!set) outcomesOf.set(h.effectId, (set = new Set()));
    set.add(h.outcome);
  }
  const found: InvariantViolation[] = [];
  const blocked = new Set<string>();
  for (const e of run.placed) {
    const id = `in/${e.partition}/${e.offset}`;
    const lane = `${e.partition}/${e.key}`;
    const seen = outcomesOf.get(id) ?? new Set();
    if (blocked.has(lane)) {
      if (!seen.has(Outcome.HELD) || seen.has(Outcome.APPLIED))
        found.push({
          invariant: 'held-key-not-held',
          detail: `${id} (key ${e.key}) is behind a parked event but was ${[...seen].join(', ') || 'never finished'}`,
        });
    } else if (e.poison) {
      if (!seen.has(Outcome.PARKED)) found.push({ invariant: 'poison-not-parked', detail: `${id} was ${[...seen].join(', ') || 'never finished'}` });
      blocked.add(lane);
    } else if (!seen.has(Outcome.APPLIED) && !seen.has(Outcome.DUPLICATE)) {
      found.push({ invariant: 'lost-event', detail: `${id} was ${[...seen].join(', ') || 'never finished'} before any resolution` });
    }
  }
  return found;
}

/** After every key is resolved: each event's effect recorded exactly once (none for a discarded poison), every key released, every offset committed. */
function checkConvergence(run: ScenarioRun): InvariantViolation[] {
  const { driver } = run;
  const applied = new Map<string, number>();
  for (const e of driver.effects()) applied.set(e.effectId, (applied.get(e.effectId) ?? 0) + 1);
  const found: InvariantViolation[] = [];
  for (const e of run.placed) {
    const id = `in/${e.partition}/${e.offset}`;
    const expected = driver.discarded().has(id) ? 0 : 1;
    const count = applied.get(id) ?? 0;
    if (count < expected)
      found.push({ invariant: 'lost-event', detail: `${id} (key ${e.key}${e.poison ? ', poison' : ''}) has no effect after every key was resolved` });
  }
  const stillParked = driver.parked();
  if (stillParked.length > 0)
    found.push({ invariant: 'key-not-released', detail: `still parked: ${stillParked.map((p) => `${p.partition}/${p.lane}`).join(', ')}` });
  for (const c of driver.committed()) {
    const end = run.placed.filter((e) => e.partition === c.partition).length;
    if (c.offset !== end) found.push({ invariant: 'commit-stuck', detail: `partition ${c.partition} committed ${c.offset} of ${end}` });
  }
  return found;
}
