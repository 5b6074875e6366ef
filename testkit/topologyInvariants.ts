import { laneOf } from '../src/engine/events.js';
import { EFFECT_ID_HEADER } from '../src/engine/outputs.js';
import { Outcome } from '../src/engine/outcomes.js';
import type { ObservedOutcome } from './driverObservations.js';
import { checkRetryAfter } from './retryAfterCheck.js';
import type { PlacedEvent, TopologyRun } from './topologyRun.js';
import type { InvariantViolation } from './violations.js';

/** The invariants that hold for every topology, each named for the anomaly it rules out. */
export type TopologyInvariant =
  /** An effect recorded while an earlier event of its key (same partition) had neither an effect nor an end without one. */
  | 'order-violation'
  /** An output topic shows a key's events (first copies, by effect id) out of their log order. */
  | 'output-out-of-order'
  /** One effect id recorded twice. */
  | 'double-effect'
  /** A commit passed an event that had not finished. */
  | 'commit-past-unfinished'
  /** A commit asked for an offset behind what was committed. */
  | 'commit-backwards'
  /** An event never ended: no effect, not filtered, parked, dead-lettered, skipped, discarded or held. */
  | 'lost-event'
  /** At the end a partition's committed offset is short of its end. */
  | 'commit-stuck'
  /** Parked keys are left after every key was resolved. */
  | 'key-not-released'
  /** A later event of a parked key was applied before the key was resolved. */
  | 'applied-while-parked'
  /** A resolved key's held events were applied out of log order. */
  | 'replay-out-of-order'
  /** A step with a declared limit was refused (429) where its limit alone decided. */
  | 'rate-limit-exceeded'
  /** A call of a step started before the Retry-After of a 429 its engine received had passed. */
  | 'retry-after-ignored'
  /** A model call for an event whose effect was already recorded (or discarded). */
  | 'wasted-model-call'
  /** A step's next attempt was called before the last failed one was recorded. */
  | 'attempt-unrecorded'
  /**
   * A row of the effect's state table written by the events of two keys of one partition, while
   * events of different keys run side by side (keyedSerial's maxInFlight above 1): one can lose
   * the other's update. Not among the defaults: drawn ids of different keys may collide (fc.uuid()
   * shrinks two events to one id); add it when rows are keyed by something of one key.
   */
  | 'row-shared-by-keys'
  /**
   * A step's schema refused the stand-in's answer for an event the stand-in did not declare
   * poison. Not among the defaults: a stand-in may answer poison from its `decide` itself; with
   * every poison event declared in `poison`, add it to catch a schema that refuses good decisions.
   */
  | 'decision-refused';

/** Every invariant but the opt-in `decision-refused` and `row-shared-by-keys`: the default of topologyProperty's `invariants`. */
export const topologyInvariants: readonly TopologyInvariant[] = [
  'order-violation',
  'output-out-of-order',
  'double-effect',
  'commit-past-unfinished',
  'commit-backwards',
  'lost-event',
  'commit-stuck',
  'key-not-released',
  'applied-while-parked',
  'replay-out-of-order',
  'rate-limit-exceeded',
  'retry-after-ignored',
  'wasted-model-call',
  'attempt-unrecorded',
];

/** What the checks found: violations, and notes on what a disposition broke on purpose. */
export interface TopologyCheck {
  readonly violations: readonly InvariantViolation[];
  /** Things that look like violations and are not: per-key order broken on purpose by `dlq` or `skip`. */
  readonly notes: readonly string[];
}

/**
 * Checks the invariants on a finished run, against what the driver observed from outside the
 * engine: the store's durable batches (effects, discards), the log's commits and records, the
 * fake models' calls. The engine's own outcomes are read only for what leaves no other trace (an
 * event filtered, dead-lettered or skipped, a parking). Events are told apart by the source
 * topic, partition and offset where they were placed.
 */
export function checkTopologyRun<T>(run: TopologyRun<T>, names: readonly TopologyInvariant[] = topologyInvariants): TopologyCheck {
  const wanted = new Set(names);
  const driver = run.driver;
  const breaches = driver.observedBreaches();
  const found: InvariantViolation[] = [];
  const add = (invariant: TopologyInvariant, details: readonly string[]) => {
    if (wanted.has(invariant)) for (const detail of details) found.push({ invariant, detail });
  };
  const broken = brokenOnPurpose(run);
  add('order-violation', breaches.order);
  add('double-effect', breaches.double);
  add('wasted-model-call', breaches.wasted);
  add('commit-past-unfinished', breaches.commitPastUnfinished);
  add('commit-backwards', breaches.commitBackwards);
  add('attempt-unrecorded', breaches.unrecordedAttempt);
  add('output-out-of-order', outputOrder(run, broken.lanes));
  add('lost-event', lostEvents(run));
  add('decision-refused', refusedDecisions(run));
  add('row-shared-by-keys', sharedRows(run));
  add('applied-while-parked', appliedWhileParked(run));
  add('replay-out-of-order', replayOrder(run));
  add('rate-limit-exceeded', declaredLimitRefusals(run));
  if (wanted.has('retry-after-ignored')) {
    for (const [step, model] of run.models) {
      const observed = driver.modelCalls().filter((c) => c.step === step);
      found.push(...checkRetryAfter(observed, model.stats()).map((v) => ({ ...v, detail: `step '${step}': ${v.detail}` })));
    }
  }
  if (run.resolved) {
    const left = driver.running ? driver.parked() : [];
    add(
      'key-not-released',
      left.length > 0
        ? [`still parked after every resolution: ${left.map((p) => `key ${JSON.stringify(p.key)} of partition ${p.partition} (${p.status})`).join(', ')}`]
        : [],
    );
  }
  add('commit-stuck', stuckCommits(run));
  return { violations: found, notes: broken.notes };
}

const describe = (e: { partition: number; offset: number; key: string | null }) =>
  `offset ${e.offset} of partition ${e.partition} (key ${JSON.stringify(e.key)})`;
const laneId = (partition: number, key: string | null) => `${partition}\u0000${key ?? ''}`;
const eventId = (partition: number, offset: number) => `${partition}/${offset}`;

/** Lanes where a `dlq` or `skip` disposition let later events go on without an earlier one: said, not failed. */
function brokenOnPurpose<T>(run: TopologyRun<T>): { lanes: Set<string>; notes: string[] } {
  const lanes = new Set<string>();
  const notes: string[] = [];
  const source = run.topology.source.topic;
  for (const h of run.driver.history()) {
    if (h.topic !== source) continue;
    // A dead letter without an attempt is a payload that never decoded: it never had a place in its key's order.
    const exhausted = (h.outcome === Outcome.DEAD_LETTERED && h.attempt !== undefined) || h.outcome === Outcome.SKIPPED;
    if (!exhausted) continue;
    const lane = laneId(h.partition, h.key);
    if (lanes.has(lane)) continue;
    lanes.add(lane);
    const how = h.outcome === Outcome.SKIPPED ? "skipped (park({ onExhausted: 'skip' }))" : "dead-lettered (park({ onExhausted: 'dlq' }))";
    notes.push(
      `${describe(h)} was ${how} after ${h.attempt ?? '?'} attempts: the later events of its key went on without it, so per-key order is broken for that key on purpose`,
    );
  }
  return { lanes, notes };
}

/** Where each effect id came from, as the run observed it (an effect id may be declared by the stream). */
function originsOfEffectIds<T>(run: TopologyRun<T>): Map<string, { partition: number; offset: number; key: string | null }> {
  const origin = new Map<string, { partition: number; offset: number; key: string | null }>();
  for (const e of run.driver.effects()) if (!origin.has(e.effectId)) origin.set(e.effectId, e);
  for (const h of run.driver.history()) if (!origin.has(h.effectId)) origin.set(h.effectId, h);
  return origin;
}

/** For each output topic: the first copy of each event's output, per key, in the log order of their events. */
function outputOrder<T>(run: TopologyRun<T>, brokenLanes: ReadonlySet<string>): string[] {
  const origin = originsOfEffectIds(run);
  const sinks = run.topology.nodes.flatMap((n) => (n.kind === 'sink' ? [n.topic] : []));
  const found: string[] = [];
  for (const topic of sinks) {
    const seen = new Set<string>();
    const lastOffset = new Map<string, { offset: number; at: number }>();
    for (const record of run.outputs.get(topic) ?? []) {
      const effectId = record.headers[EFFECT_ID_HEADER];
      const from = effectId === undefined ? undefined : origin.get(effectId);
      if (!from || seen.has(effectId!)) continue;
      seen.add(effectId!);
      const lane = laneId(from.partition, from.key);
      if (brokenLanes.has(lane)) continue;
      const last = lastOffset.get(lane);
      if (last && last.offset > from.offset) {
        found.push(
          `topic '${topic}' shows the output of ${describe(from)} at ${record.partition}/${record.offset}, after the output of offset ${last.offset} of the same key (at ${record.partition}/${last.at}): outputs out of their events' order`,
        );
      }
      if (!last || last.offset < from.offset) lastOffset.set(lane, { offset: from.offset, at: record.offset });
    }
  }
  return found.slice(0, 5);
}

/** Outcomes that end an event with no effect of its own. */
const endsWithoutEffect: ReadonlySet<string> = new Set([
  Outcome.FILTERED,
  Outcome.DEAD_LETTERED,
  Outcome.SKIPPED,
  Outcome.FORWARDED,
  Outcome.DUPLICATE,
  Outcome.DISCARDED,
]);

/**
 * Answers of the stand-in that a step's schema refused, for events it did not declare poison: the
 * stand-in answers what a well-behaved model would, so the schema refuses a good decision (or the
 * stand-in is wrong). Told once per step and event.
 */
function refusedDecisions<T>(run: TopologyRun<T>): string[] {
  const found: string[] = [];
  const told = new Set<string>();
  for (const h of run.driver.history()) {
    const refused = h.error === undefined ? null : SCHEMA_REFUSAL.exec(h.error);
    if (!refused) continue;
    const step = refused[1]!;
    const model = run.models.get(step);
    if (!model || told.has(`${step}\u0000${h.effectId}`)) continue;
    const answers = model.stats().calls.filter((c) => c.effectId === h.effectId && c.result === 'answered');
    if (answers.length === 0 || answers.some((c) => c.poison)) continue;
    told.add(`${step}\u0000${h.effectId}`);
    found.push(
      `${describe(h)}: step '${step}' refused the stand-in's answer, and the stand-in did not declare the event poison (${refused[2]}). ` +
        "The stand-in answers what a well-behaved model would: the step's schema refuses a good decision, or the stand-in is wrong; an event meant to be refused belongs in the stand-in's poison",
    );
  }
  return found;
}

/**
 * Rows of the effect's table written by events of more than one key in a partition, when keys run
 * side by side: each effect reads its rows when it starts and writes them when it ends, so two
 * keys' effects in flight at once can each overwrite the other's update (Kafka Streams runs a
 * partition's events one at a time; orderly runs its keys concurrently). Told once per row.
 */
function sharedRows<T>(run: TopologyRun<T>): string[] {
  if (run.topology.maxInFlight <= 1) return [];
  // By lane, not key: events without a key are each a lane of their own, run side by side too.
  const lanesOf = new Map<string, { partition: number; row: string; lanes: Map<string, string> }>();
  for (const e of run.driver.effects()) {
    for (const { row } of e.state) {
      const at = `${e.partition}\u0000${row}`;
      const seen = lanesOf.get(at) ?? { partition: e.partition, row, lanes: new Map<string, string>() };
      seen.lanes.set(laneOf(e), e.key === null ? `the keyless event at offset ${e.offset}` : JSON.stringify(e.key));
      lanesOf.set(at, seen);
    }
  }
  return [...lanesOf.values()]
    .filter((r) => r.lanes.size > 1)
    .map(
      (r) =>
        `row ${JSON.stringify(r.row)} of partition ${r.partition} was written by the effects of keys ${[...r.lanes.values()].join(', ')}: ` +
        `keys run side by side (maxInFlight ${run.topology.maxInFlight}), so one can lose the other's update; key the rows by the event's key (or an id of the event), or run keyedSerial({ maxInFlight: 1 })`,
    );
}

/** The engine's error for a decision its step's schema refused: the step, then the issues. */
const SCHEMA_REFUSAL = /^agentStep '([^']+)': decision failed its schema: (.*)$/s;

/**
 * Every placed event ended: an effect recorded, a discard recorded, its hold deleted by a replay,
 * or an end without effect (filtered, dead-lettered, skipped, forwarded, a duplicate); or, with
 * parked keys left parked, parked or held.
 */
function lostEvents<T>(run: TopologyRun<T>): string[] {
  const driver = run.driver;
  const source = run.topology.source.topic;
  const ended = new Set<string>();
  const seen = new Map<string, Set<string>>();
  for (const e of driver.effects()) if (e.topic === source) ended.add(eventId(e.partition, e.offset));
  for (const d of driver.discards()) if (d.topic === source) ended.add(eventId(d.partition, d.offset));
  const released = driver.releasedFromHold();
  for (const h of driver.history()) {
    // A held event whose hold was deleted: its replay ended it, even if a crash came before the engine said how.
    if (h.topic === source && released.has(h.effectId)) ended.add(eventId(h.partition, h.offset));
    if (h.topic !== source) continue;
    const id = eventId(h.partition, h.offset);
    let outcomes = seen.get(id);
    if (!outcomes) seen.set(id, (outcomes = new Set()));
    outcomes.add(h.outcome);
    if (endsWithoutEffect.has(h.outcome)) ended.add(id);
    // Left parked (no resolutions asked for): parked and held events have ended, for now.
    if (!run.resolved && (h.outcome === Outcome.PARKED || h.outcome === Outcome.HELD)) ended.add(id);
  }
  const found: string[] = [];
  for (const e of run.placed) {
    const id = eventId(e.partition, e.offset);
    if (ended.has(id)) continue;
    const outcomes = [...(seen.get(id) ?? [])];
    found.push(
      `${describe(e)}, value ${short(e.value)}, never ended: ${outcomes.length > 0 ? `the engine reported ${outcomes.join(', ')}` : 'the engine reported nothing for it'}, and no effect or discard of it was recorded`,
    );
  }
  return found.slice(0, 5);
}

/** A later event of a parked key applied after the parking and before the key's resolution. */
function appliedWhileParked<T>(run: TopologyRun<T>): string[] {
  const driver = run.driver;
  const source = run.topology.source.topic;
  const effects = driver.effects().filter((e) => e.topic === source);
  const settledAt = new Map<string, number>();
  for (const e of effects) settledAt.set(eventId(e.partition, e.offset), Math.min(settledAt.get(eventId(e.partition, e.offset)) ?? Infinity, e.seq));
  for (const d of driver.discards()) settledAt.set(eventId(d.partition, d.offset), Math.min(settledAt.get(eventId(d.partition, d.offset)) ?? Infinity, d.seq));
  const found: string[] = [];
  for (const parked of parkings(driver.history(), source)) {
    const lane = laneId(parked.partition, parked.key);
    const resolution = driver.resolutions().find((r) => r.seq > parked.seq && laneId(r.partition, r.key) === lane);
    const until = resolution?.seq ?? Infinity;
    // A parking that a crash undid (an aborted transaction) ends when the parked event itself is applied.
    const headSettled = settledAt.get(eventId(parked.partition, parked.offset)) ?? Infinity;
    for (const e of effects) {
      if (laneId(e.partition, e.key) !== lane || e.offset <= parked.offset || e.seq <= parked.seq || e.seq >= until || e.seq >= headSettled) continue;
      found.push(
        `${describe(e)} was applied by engine ${e.instance} at ${e.recordedAtMs} ms while offset ${parked.offset} of its key was parked (since ${parked.atMs} ms${resolution ? `, resolved at ${resolution.atMs} ms` : ', never resolved'})`,
      );
    }
  }
  return found.slice(0, 5);
}

/** The first parking of each event (a PARKED reported again after a redelivery is the same parking). */
function parkings(history: readonly ObservedOutcome[], source: string): ObservedOutcome[] {
  return history.filter((h) => h.topic === source && h.outcome === Outcome.PARKED && !h.again && !h.replayed);
}

/** After a resolution, the key's effects come in log order until it parks again. */
function replayOrder<T>(run: TopologyRun<T>): string[] {
  const driver = run.driver;
  const source = run.topology.source.topic;
  const found: string[] = [];
  for (const r of driver.resolutions()) {
    const lane = laneId(r.partition, r.key);
    const nextParking = parkings(driver.history(), source).find((p) => p.seq > r.seq && laneId(p.partition, p.key) === lane)?.seq ?? Infinity;
    let last: { offset: number } | undefined;
    for (const e of driver.effects()) {
      if (e.topic !== source || e.seq <= r.seq || e.seq >= nextParking || laneId(e.partition, e.key) !== lane) continue;
      if (last && e.offset < last.offset)
        found.push(
          `after key ${JSON.stringify(r.key)} of partition ${r.partition} was resolved at ${r.atMs} ms, offset ${e.offset} was applied after offset ${last.offset}: the replay left log order`,
        );
      last = e;
    }
  }
  return found.slice(0, 5);
}

/**
 * A 429 from a step whose model enforces the step's declared limit (or a looser one) is a breach, unless
 * another engine instance called in the same provider window: the limit is kept per engine
 * process, and a restarted engine does not know the calls its predecessor made (docs/rate-limits.md).
 */
function declaredLimitRefusals<T>(run: TopologyRun<T>): string[] {
  const found: string[] = [];
  for (const node of run.topology.nodes) {
    if (node.kind !== 'agentStep' || node.limit?.calls === undefined) continue;
    const enforced = run.limits.get(node.name);
    // A provider at least as generous as the declared limit never refuses an engine that keeps it.
    if (!enforced || enforced.calls < node.limit.calls || enforced.windowMs > node.limit.windowMs) continue;
    const calls = run.models.get(node.name)?.stats().calls ?? [];
    const windowOf = (atMs: number) => Math.floor(atMs / enforced.windowMs);
    for (const call of calls) {
      if (call.accepted) continue;
      const shared = calls.some((c) => c.instance !== call.instance && windowOf(c.atMs) === windowOf(call.atMs));
      if (shared) continue;
      found.push(
        `step '${node.name}' declares ${enforced.calls} calls per ${enforced.windowMs} ms, yet ${call.instance ?? 'its engine'} was refused (429) for ${call.effectId} (key ${JSON.stringify(call.key)}) at ${call.atMs} ms, in a window no other engine instance called in`,
      );
    }
  }
  return found.slice(0, 5);
}

/** With nothing left parked, every partition is committed to its end. */
function stuckCommits<T>(run: TopologyRun<T>): string[] {
  const ends = new Map<number, number>();
  for (const e of run.placed) ends.set(e.partition, Math.max(ends.get(e.partition) ?? 0, e.offset + 1));
  const found: string[] = [];
  for (const c of run.driver.committed()) {
    const end = ends.get(c.partition) ?? 0;
    if (c.offset !== end) found.push(`partition ${c.partition} is committed to ${c.offset} of its ${end} events after the run settled`);
  }
  return found;
}

/** A value in a line, cut short. */
export function short(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

export type { PlacedEvent };
