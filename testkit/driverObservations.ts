import { attemptsStoreOf, runsStoreOf } from '../src/graph/stores.js';
import type { Topology } from '../src/dsl/topology.js';
import type { EffectRecord } from '../src/engine/outputs.js';
import { finishedOutcomes, Outcome, type EngineObserver, type OutcomeEvent } from '../src/engine/outcomes.js';
import type { TopicPartition } from '../src/ports/log.js';
import type { StoreOp } from '../src/ports/store.js';
import type { Resolution } from '../src/engine/parkedKeys.js';
import { stateKeys } from '../src/state/stateKeys.js';
import { laneOf } from '../src/engine/events.js';
import { readOffsetMetadata } from '../src/engine/offsetMetadata.js';

/** An effect as the store received it. */
export interface AppliedEffect extends Omit<EffectRecord, 'outputs'> {
  readonly instance: number;
  readonly recordedAtMs: number;
  /** Its place among everything the driver observed (outcomes, effects, discards, resolutions, commits). */
  readonly seq: number;
  /**
   * The rows of the effect's state table as the effect left them: the puts (`value`) and deletes
   * (no `value`) written in the same atomic batch as its record, by row.
   */
  readonly state: ReadonlyArray<{ readonly row: string; readonly value?: unknown }>;
}

/** An outcome as the driver heard it, with the instance that reported it and its place in the run. */
export type ObservedOutcome = OutcomeEvent & {
  readonly instance: number;
  readonly seq: number;
  /** A PARKED for an event that an earlier instance had parked already: reported again on a redelivery, not a new parking. */
  readonly again?: true;
};

/** A commit as it reached the log. */
export interface CommitObserved extends TopicPartition {
  /** The log's committed offset after it. */
  readonly offset: number;
  /** What the engine asked for. */
  readonly asked: number;
  /** The log's committed offset before it. */
  readonly from: number;
  readonly instance: number;
  /** False when the log refused it (a rebalance took the partition, a fenced producer). */
  readonly accepted: boolean;
  readonly atMs: number;
  readonly seq: number;
}

/** A parked event discarded by a resolution, as the store received it. */
export interface DiscardObserved extends TopicPartition {
  readonly effectId: string;
  readonly offset: number;
  readonly key: string | null;
  readonly atMs: number;
  readonly seq: number;
}

/** A resolution recorded through the driver. */
export interface ResolutionObserved {
  readonly partition: number;
  readonly key: string;
  readonly resolution: Resolution;
  readonly atMs: number;
  readonly seq: number;
}

/** A call of the agent step as an engine instance issued it. */
export interface ObservedModelCall {
  /** The engine instance (1 for the first, one more at each restart). */
  readonly instance: number;
  /** The agent step called. */
  readonly step: string;
  readonly effectId: string;
  readonly atMs: number;
  readonly attempt: number;
}

/** The first few (up to 5) of each breach the driver counts, in words. */
export interface DriverBreaches {
  /** An effect recorded while an earlier event of its key was unsettled (see DriverMetrics.orderViolations). */
  readonly order: readonly string[];
  readonly double: readonly string[];
  readonly wasted: readonly string[];
  readonly commitPastUnfinished: readonly string[];
  /** A commit accepted that asked for less than the committed offset. */
  readonly commitBackwards: readonly string[];
  readonly unrecordedAttempt: readonly string[];
  /** A durable step that ran after its journal entry was durable. */
  readonly stepRunAgain: readonly string[];
}

/** What the driver counted across every engine instance of a run. */
export interface DriverMetrics {
  /** Agent-step calls issued by the engines (accepted, refused or failed). */
  readonly modelCalls: number;
  /** 429s the engines received. */
  readonly rateLimited: number;
  /** Records delivered again after a crash. */
  readonly redeliveries: number;
  /** Redelivered events whose effect was found recorded: no model call, no effect. */
  readonly duplicatesPrevented: number;
  /** Calls issued for an event whose effect was already recorded. */
  readonly wastedModelCalls: number;
  /** Effects recorded while an earlier event of their key (in the log) had neither an effect nor an end without one. */
  readonly orderViolations: number;
  /** Effect ids recorded twice. */
  readonly doubleEffects: number;
  /** Instances ended by a crash (at a time or a point, or after a fatal error); a stop counts in `stops` instead. */
  readonly crashes: number;
  /** Stops as on SIGTERM ({@link TopologyTestDriver.stop}). */
  readonly stops: number;
  /** Partition restores begun (with DriverOptions.restoreMs), and of those, ended by a stop or a failure before their end. */
  readonly restores: number;
  readonly restoresAbandoned: number;
  /** Exactly-once: resets after an aborted transaction (partitions lost, or a write the transaction failed under). */
  readonly partitionResets: number;
  /** Exactly-once: partitions those resets restored (the owned ones whose work the aborted transaction held), summed over resets. */
  readonly partitionsReset: number;
  /** Exactly-once: partitions owned (and not lost) when those resets came, summed over resets: the others went on without a reset. */
  readonly partitionsOwnedAtResets: number;
  /** Finished offsets the commit metadata listed when partitions were assigned (skipped when redelivered), summed over assignments. */
  readonly finishedOffsetsResumed: number;
  /** Commits that passed an event with no finished outcome yet, or listed one as finished in their metadata. */
  readonly commitsPastUnfinished: number;
  /** Calls of a step's attempt n > 1 made before attempt n - 1 was recorded (written and acknowledged): a crash would forget it. */
  readonly unrecordedAttempts: number;
  /**
   * Runs of a durable step (`ctx.step`) that began after its journal entry was durable, as a test's
   * stand-in for the outside system reports them ({@link TopologyTestDriver.stepRan}); runs by an
   * instance fenced out of its group are not counted.
   */
  readonly stepsRunAgain: number;
  readonly outcomes: Readonly<Record<Outcome, number>>;
}

/**
 * What the driver sees from outside the engine: its outcomes, the effects the store received,
 * the records delivered. The invariants are checked against these, not against the engine's word.
 */
export class DriverObservations {
  readonly history: ObservedOutcome[] = [];
  readonly effects: AppliedEffect[] = [];
  /** Every call of the agent step, in the order the engines issued them. */
  readonly modelCalls: ObservedModelCall[] = [];
  /** When each instance's last call of a step for an effect id ended (`<instance>|<step>|<effect id>`): to tell a call that never answered from what follows one that did. */
  readonly callsEnded = new Map<string, number>();
  /** Effect ids of the parked events a person discarded, as the store received them. */
  readonly discarded = new Set<string>();
  readonly discards: DiscardObserved[] = [];
  /** The parked keys and held events as the durable state holds them (what a restart finds), by state key. */
  readonly parkedState = new Map<string, unknown>();
  /** Effect ids of held events whose hold was deleted durably: their replay ended them (with an effect or without). */
  readonly releasedFromHold = new Set<string>();
  readonly resolutions: ResolutionObserved[] = [];
  /** The first few of each counted breach, in words, for a failure message. */
  readonly breaches: Record<keyof DriverBreaches, string[]> = {
    order: [],
    double: [],
    wasted: [],
    commitPastUnfinished: [],
    commitBackwards: [],
    unrecordedAttempt: [],
    stepRunAgain: [],
  };
  private seq = 0;
  /** Parked and held events by effect id, from their outcomes: what a deleted hold names. */
  private readonly heldEvents = new Map<string, TopicPartition & { offset: number; key: string | null }>();
  /** Effect ids some instance reported PARKED, with that instance. */
  private readonly parkedBy = new Map<string, number>();
  /** Records delivered again after a crash, when they were delivered. */
  readonly redeliveries: Array<TopicPartition & { offset: number; key: string | null; atMs: number }> = [];
  /** Commits that moved a partition's committed offset, or asked to move it back, when they reached the log. */
  readonly commits: CommitObserved[] = [];
  private readonly effectIds = new Set<string>();
  // By partition number: only the source topic's partitions are observed.
  private readonly partitions: PartitionObservations[] = [];
  private readonly outcomes = Object.fromEntries(Object.values(Outcome).map((o) => [o, 0])) as Record<Outcome, number>;
  private counts = {
    modelCalls: 0,
    redeliveries: 0,
    wastedModelCalls: 0,
    orderViolations: 0,
    doubleEffects: 0,
    crashes: 0,
    stops: 0,
    restores: 0,
    restoresAbandoned: 0,
    partitionResets: 0,
    partitionsReset: 0,
    partitionsOwnedAtResets: 0,
    commitsPastUnfinished: 0,
    unrecordedAttempts: 0,
    stepsRunAgain: 0,
    finishedOffsetsResumed: 0,
  };
  /** Instances fenced out of the group (see TopologyTestDriver.fence). */
  private readonly fenced = new Set<number>();
  /** The most attempts ever acknowledged for an event, by `store|topic/partition/offset` (each step and the effect keep their own). */
  private readonly attemptsRecorded = new Map<string, number>();
  /** Durable steps whose journal entry was durable once, by `store|effectId|name`. */
  private readonly journaledSteps = new Set<string>();
  private readonly effectPrefix: string | undefined;
  private readonly ringPrefix: string | undefined;
  /**
   * Every durable write and delete of an effect record, in order, as key and value (undefined for
   * a delete): appending is all a batch costs, and {@link prunedEffects} replays it when asked.
   */
  private readonly effectWrites: Array<string | EffectRecord | undefined> = [];
  /** How far {@link effectWrites} was replayed into {@link storedEffects} and {@link pruned}. */
  private effectWritesReplayed = 0;
  /** Effect records durable now, by state key, as of the replay. */
  private readonly storedEffects = new Map<string, EffectRecord>();
  private readonly pruned = new Map<string, EffectRecord>();
  private readonly tablePrefix: string | undefined;

  /**
   * `declaredIdAt`: the declared effect id of the source record at a partition's offset (none
   * without a declared `effectId`), to tell a copy of an event (the same id at a later offset,
   * ended by its twin's effect) from an event left behind.
   */
  constructor(
    topology: Topology,
    private readonly declaredIdAt: (partition: number, offset: number) => string | undefined = () => undefined,
  ) {
    this.effectPrefix = topology.applyOnce && stateKeys.effectPrefix(topology.applyOnce.name);
    this.ringPrefix = topology.applyOnce && stateKeys.ringPrefix(topology.applyOnce.name);
    this.tablePrefix = topology.applyOnce && stateKeys.tablePrefix(topology.applyOnce.name);
  }

  observer(instance: number, onFatal: (error: Error) => void): EngineObserver {
    return {
      outcome: (event) => {
        // The engine made this object for the observer alone: tag it rather than copy it.
        const tagged = event as OutcomeEvent & { instance: number; seq: number; again?: true };
        tagged.instance = instance;
        tagged.seq = this.seq++;
        if (event.outcome === Outcome.PARKED || event.outcome === Outcome.HELD)
          this.heldEvents.set(event.effectId, { topic: event.topic, partition: event.partition, offset: event.offset, key: event.key });
        if (event.outcome === Outcome.PARKED && !event.replayed) {
          const by = this.parkedBy.get(event.effectId);
          if (by !== undefined && by !== instance) tagged.again = true;
          else this.parkedBy.set(event.effectId, instance);
        }
        this.history.push(tagged);
        this.outcomes[event.outcome] += 1;
        if (endsWithoutEffect.has(event.outcome)) this.lane(event).settle(event.offset);
        // A fenced instance's outcomes finish nothing the group commits.
        if (finishedOutcomes.has(event.outcome) && !event.replayed && !this.fenced.has(instance)) this.partition(event.partition).finished.add(event.offset);
      },
      modelCall: (call) => {
        this.counts.modelCalls += 1;
        this.modelCalls.push({ instance, step: call.step, effectId: call.effectId, atMs: call.atMs, attempt: call.attempt });
        // Attempts are stored by the event's offset (whatever its effect id), under the step's store.
        const recorded =
          call.attempt > 1 ? (this.attemptsRecorded.get(`${attemptsStoreOf(call.step)}|${call.topic}/${call.partition}/${call.offset}`) ?? 0) : 0;
        if (call.attempt > 1 && recorded < call.attempt - 1) {
          this.counts.unrecordedAttempts += 1;
          note(
            this.breaches.unrecordedAttempt,
            `engine ${instance} called step '${call.step}' for ${call.effectId} (attempt ${call.attempt}) at ${call.atMs} ms before attempt ${call.attempt - 1} was recorded`,
          );
        }
        // A fenced instance's calls in flight are the cost of its freeze, not a wasted call of the group's owner.
        if (!this.fenced.has(instance) && (this.effectIds.has(call.effectId) || this.discarded.has(call.effectId))) {
          this.counts.wastedModelCalls += 1;
          note(
            this.breaches.wasted,
            `engine ${instance} called step '${call.step}' for ${call.effectId} at ${call.atMs} ms, after its effect was ${this.discarded.has(call.effectId) ? 'discarded' : 'recorded'}`,
          );
        }
      },
      modelCallEnded: (call) => {
        this.callsEnded.set(`${instance}|${call.step}|${call.effectId}`, call.atMs);
      },
      resumed: (resume) => {
        this.counts.finishedOffsetsResumed += resume.finishedAbove;
      },
      fatal: onFatal,
    };
  }

  delivered(record: TopicPartition & { offset: number; key: string | null }, atMs: number): void {
    const partition = this.partition(record.partition);
    if (record.offset <= partition.highestDelivered) {
      this.counts.redeliveries += 1;
      this.redeliveries.push({ topic: record.topic, partition: record.partition, offset: record.offset, key: record.key, atMs });
    } else {
      partition.highestDelivered = record.offset;
      partition.arrived(record);
    }
  }

  /** The instance was fenced out of the group; it may run on. */
  fencedOut(instance: number): void {
    this.fenced.add(instance);
  }

  /** A batch was acknowledged (durable, or in the open transaction): note the attempts it recorded. */
  acknowledged(ops: readonly StoreOp[]): void {
    for (const op of ops) {
      if (op.type !== 'put' || !op.key.startsWith('attempts/')) continue;
      const { store, topic, partition, rest } = stateKeys.parse(op.key);
      const event = `${store}|${topic}/${partition}/${Number(rest)}`;
      const count = (op.value as { count: number }).count;
      if (count > (this.attemptsRecorded.get(event) ?? 0)) this.attemptsRecorded.set(event, count);
    }
  }

  /** A resolution was recorded. */
  resolved(resolution: Omit<ResolutionObserved, 'seq' | 'atMs'>, atMs: number): void {
    this.resolutions.push({ ...resolution, atMs, seq: this.seq++ });
  }

  /**
   * A durable step began to run (its outside system said so): counted when its journal entry was
   * durable already, unless the instance was fenced out of its group (a zombie runs on until it
   * hears so, as on Kafka).
   */
  stepRan(instance: number, agentStep: string, effectId: string, step: string, atMs: number): void {
    if (this.fenced.has(instance) || !this.journaledSteps.has(`${runsStoreOf(agentStep)}|${effectId}|${step}`)) return;
    this.counts.stepsRunAgain += 1;
    note(
      this.breaches.stepRunAgain,
      `engine ${instance} ran durable step '${step}' of agentStep '${agentStep}' for ${effectId} at ${atMs} ms, after its journal entry was durable`,
    );
  }

  /** A batch is durable: note the effects it recorded, each with the table rows its event wrote. */
  written(ops: readonly StoreOp[], instance: number, atMs: number): void {
    // Holds first: a replayed held event's effect in this batch comes after its release from the hold.
    for (const op of ops) {
      // Only run/, parked/, held/ and heldid/ keys matter here (horizon/ is skipped below): one char tells most keys apart.
      const first = op.key.charCodeAt(0);
      if (first === R) {
        if (op.type !== 'put' || !op.key.startsWith('run/')) continue;
        const { store, rest } = stateKeys.parse(op.key);
        this.journaledSteps.add(`${store}|${rest.slice(0, rest.lastIndexOf('/'))}|${(op.value as { name: string }).name}`);
      } else if (first === P || first === H) {
        if (op.key.startsWith('parked/') || op.key.startsWith('held/')) {
          if (op.type === 'put') this.parkedState.set(op.key, op.value);
          else this.parkedState.delete(op.key);
          continue;
        }
        if (op.type !== 'del' || !op.key.startsWith('heldid/')) continue;
        const effectId = stateKeys.parse(op.key).rest;
        this.releasedFromHold.add(effectId);
        // Its replay ended it: with an effect (in this batch, noted below) or without one (filtered, say).
        const held = this.heldEvents.get(effectId);
        if (held) this.lane(held).settle(held.offset);
      }
    }
    const prefix = this.effectPrefix;
    const ring = this.ringPrefix;
    if (!prefix || !ring) return;
    const table = this.tablePrefix;
    // An event's ops are contiguous in a batch, its effect record last: its rows are the table ops since the previous record.
    let since = 0;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      if (!op.key.startsWith(prefix) && !op.key.startsWith(ring)) continue;
      this.effectWrites.push(op.key, op.type === 'put' ? (op.value as EffectRecord) : undefined);
      if (op.type !== 'put') continue;
      const record = op.value as EffectRecord;
      const state: Array<{ row: string; value?: unknown }> = [];
      if (table) {
        for (let j = since; j < i; j++) {
          const row = ops[j]!;
          if (!row.key.startsWith(table)) continue;
          const { partition, rest } = tableRowOf(row.key, table.length);
          if (partition === record.partition) state.push(row.type === 'put' ? { row: rest, value: row.value } : { row: rest });
        }
      }
      since = i + 1;
      if (record.discardedAtMs !== undefined) {
        this.discarded.add(record.effectId);
        this.discards.push({
          effectId: record.effectId,
          topic: record.topic,
          partition: record.partition,
          offset: record.offset,
          key: record.key,
          atMs,
          seq: this.seq++,
        });
        this.lane(record).settle(record.offset);
      } else {
        const { effectId, topic, partition, offset, key, appliedAtMs } = record;
        this.noteEffect({ effectId, topic, partition, offset, key, appliedAtMs, instance, recordedAtMs: atMs, seq: this.seq++, state });
      }
    }
  }

  /**
   * Effect records pruned (deleted once durable, as the engine prunes those no event can need), by
   * state key, as they were before: the state still shows their effects. A record in a ring is
   * under `<state key>@<its offset>`, and one that a later record replaced at its position counts
   * as pruned too.
   */
  prunedEffects(): ReadonlyMap<string, EffectRecord> {
    const writes = this.effectWrites;
    for (let i = this.effectWritesReplayed; i < writes.length; i += 2) {
      const key = writes[i] as string;
      const value = writes[i + 1] as EffectRecord | undefined;
      if (value !== undefined) {
        const replaced = this.storedEffects.get(key);
        if (replaced && replaced.offset !== value.offset) this.pruned.set(this.prunedKey(key, replaced), replaced);
        this.storedEffects.set(key, value);
        // Written again (a record pruned, then its event recorded anew): it is stored, not pruned.
        this.pruned.delete(this.prunedKey(key, value));
        continue;
      }
      const record = this.storedEffects.get(key);
      this.storedEffects.delete(key);
      if (record) this.pruned.set(this.prunedKey(key, record), record);
    }
    this.effectWritesReplayed = writes.length;
    return this.pruned;
  }

  /** Where {@link pruned} keeps a record: by state key, and a ring position's by its offset too (the position holds many in turn). */
  private prunedKey(key: string, record: EffectRecord): string {
    return this.ringPrefix !== undefined && key.startsWith(this.ringPrefix) ? `${key}@${record.offset}` : key;
  }

  /**
   * A commit reached the log: every offset below it must have finished, and every offset its
   * metadata lists as finished above it too (a restart skips them); none goes back.
   */
  committed(
    commits: ReadonlyArray<TopicPartition & { asked: number; from: number; to: number; metadata?: string }>,
    instance: number,
    accepted: boolean,
    atMs: number,
  ): void {
    for (const c of commits) {
      if (c.to !== c.from || c.asked < c.from)
        this.commits.push({ topic: c.topic, partition: c.partition, offset: c.to, asked: c.asked, from: c.from, instance, accepted, atMs, seq: this.seq++ });
      if (accepted && c.asked < c.from)
        note(
          this.breaches.commitBackwards,
          `engine ${instance} committed partition ${c.partition} at ${c.asked}, behind its committed ${c.from}, at ${atMs} ms`,
        );
      const finished = this.partition(c.partition).finished;
      for (let o = c.from; o < c.to; o++) {
        if (!finished.has(o)) {
          this.counts.commitsPastUnfinished += 1;
          note(
            this.breaches.commitPastUnfinished,
            `partition ${c.partition} was committed from ${c.from} to ${c.to} at ${atMs} ms while offset ${o} had not finished`,
          );
          break;
        }
      }
      if (c.metadata) this.checkListed(c.partition, c.to, c.metadata, atMs);
    }
  }

  /** Every offset a commit's metadata lists as finished must have finished: a restart skips it. */
  private checkListed(partition: number, committed: number, metadata: string, atMs: number): void {
    const finished = this.partition(partition).finished;
    for (const range of readOffsetMetadata(committed, metadata).ranges) {
      for (let o = range.start; o < range.end; o++) {
        if (finished.has(o)) continue;
        this.counts.commitsPastUnfinished += 1;
        note(
          this.breaches.commitPastUnfinished,
          `partition ${partition}'s commit at ${committed} listed offset ${o} as finished in its metadata at ${atMs} ms while it had not finished`,
        );
        return;
      }
    }
  }

  private partition(partition: number): PartitionObservations {
    return (this.partitions[partition] ??= new PartitionObservations());
  }

  crashed(): void {
    this.counts.crashes += 1;
  }

  stopped(): void {
    this.counts.stops += 1;
  }

  /** A partition's restore began, or was abandoned by a stop or a failure. */
  restore(what: 'begun' | 'abandoned'): void {
    if (what === 'begun') this.counts.restores += 1;
    else this.counts.restoresAbandoned += 1;
  }

  reset({ partitions, owned }: { readonly partitions: number; readonly owned: number }): void {
    this.counts.partitionResets += 1;
    this.counts.partitionsReset += partitions;
    this.counts.partitionsOwnedAtResets += owned;
  }

  metrics(): DriverMetrics {
    return {
      ...this.counts,
      rateLimited: this.outcomes.RATE_LIMITED,
      duplicatesPrevented: this.outcomes.DUPLICATE,
      outcomes: { ...this.outcomes },
    };
  }

  private noteEffect(effect: AppliedEffect): void {
    if (this.effectIds.has(effect.effectId)) {
      this.counts.doubleEffects += 1;
      note(
        this.breaches.double,
        `effect ${effect.effectId} of ${whereOf(effect)} was recorded again by engine ${effect.instance} at ${effect.recordedAtMs} ms`,
      );
    }
    const lane = this.lane(effect);
    let first = lane.firstUnsettled();
    // A copy whose twin's effect is recorded has ended by it, even before its DUPLICATE is reported
    // (staged, that waits for its twin's outputs to be acknowledged). Looked up before this effect
    // is added: an effect recorded under an earlier event's id must not settle that event.
    while (first < effect.offset && this.twinRecorded(effect.partition, first)) {
      lane.settle(first);
      first = lane.firstUnsettled();
    }
    this.effectIds.add(effect.effectId);
    this.effects.push(effect);
    if (first < effect.offset) {
      this.counts.orderViolations += 1;
      note(
        this.breaches.order,
        `${whereOf(effect)} was applied by engine ${effect.instance} at ${effect.recordedAtMs} ms while offset ${first} of the same key had neither an effect nor an end`,
      );
    }
    lane.settle(effect.offset);
  }

  private twinRecorded(partition: number, offset: number): boolean {
    const id = this.declaredIdAt(partition, offset);
    return id !== undefined && this.effectIds.has(id);
  }

  private lane(at: TopicPartition & { key: string | null; offset: number }): LaneOrder {
    return this.partition(at.partition).laneOf(at);
  }
}

/** Where an effect's event lies, in words: built only for a breach, as effects are many. */
function whereOf(effect: AppliedEffect): string {
  return `offset ${effect.offset} of partition ${effect.partition} (key ${JSON.stringify(effect.key)})`;
}

/**
 * The partition and row of a table key, whose `table/<store>/` prefix is `prefixLength` long:
 * `stateKeys.parse` without decoding the store and topic, which every effect's rows would pay for.
 */
function tableRowOf(key: string, prefixLength: number): { partition: number; rest: string } {
  const topicEnd = key.indexOf('/', prefixLength);
  const partitionEnd = topicEnd < 0 ? -1 : key.indexOf('/', topicEnd + 1);
  if (partitionEnd < 0) return stateKeys.parse(key);
  return { partition: Number(key.slice(topicEnd + 1, partitionEnd)), rest: key.slice(partitionEnd + 1) };
}

const R = 'r'.charCodeAt(0);
const P = 'p'.charCodeAt(0);
const H = 'h'.charCodeAt(0);

/** Keeps the first few breaches of a kind: enough to show, bounded however many there are. */
function note(list: string[], detail: string): void {
  if (list.length < 5) list.push(detail);
}

/** What the driver tracks of one partition of the source topic. */
class PartitionObservations {
  highestDelivered = -1;
  /** Offsets with a finished outcome. */
  readonly finished = new OffsetSet();
  /** Offsets settled (an effect, or an end without one): what each key's order is checked against. */
  readonly settled = new OffsetSet();
  private readonly lanes = new Map<string, LaneOrder>();
  // The lane of each delivered offset, so that an effect finds its lane without a lookup by key.
  private readonly laneAt: LaneOrder[] = [];

  arrived(record: { key: string | null; offset: number }): void {
    const lane = this.laneByKey(record);
    this.laneAt[record.offset] = lane;
    lane.arrived(record.offset);
  }

  laneOf(at: { key: string | null; offset: number }): LaneOrder {
    return (at.offset < this.laneAt.length && this.laneAt[at.offset]) || this.laneByKey(at);
  }

  private laneByKey(at: { key: string | null; offset: number }): LaneOrder {
    const id = laneOf(at);
    let lane = this.lanes.get(id);
    if (!lane) this.lanes.set(id, (lane = new LaneOrder(this.settled)));
    return lane;
  }
}

// Outcomes that end an event for good without an effect: later events of its key may go on.
// DUPLICATE too: a copy with a declared effect id ends without an effect of its own (a redelivery's
// offset is settled by its effect already).
const endsWithoutEffect: ReadonlySet<Outcome> = new Set<Outcome>([
  Outcome.FILTERED,
  Outcome.DEAD_LETTERED,
  Outcome.SKIPPED,
  Outcome.FORWARDED,
  Outcome.DUPLICATE,
]);

/** The offsets of one key in the order they arrived, and which of them are settled. */
class LaneOrder {
  private readonly offsets: number[] = [];
  private head = 0;

  /** `settled`: the partition's settled offsets (an offset belongs to one key only). */
  constructor(private readonly settled: OffsetSet) {}

  arrived(offset: number): void {
    this.offsets.push(offset);
  }

  settle(offset: number): void {
    this.settled.add(offset);
    while (this.head < this.offsets.length && this.settled.has(this.offsets[this.head]!)) this.head += 1;
  }

  /** The earliest offset of the key with neither an effect nor an end without one. */
  firstUnsettled(): number {
    return this.offsets[this.head] ?? Infinity;
  }
}

/** A set of a partition's offsets: one bit each, as offsets are small, dense whole numbers. */
class OffsetSet {
  private bits = new Uint32Array(1024);

  add(offset: number): void {
    const word = offset >>> 5;
    if (word >= this.bits.length) {
      const grown = new Uint32Array(Math.max(this.bits.length * 2, word + 1));
      grown.set(this.bits);
      this.bits = grown;
    }
    this.bits[word]! |= 1 << (offset & 31);
  }

  has(offset: number): boolean {
    const word = offset >>> 5;
    return word < this.bits.length && (this.bits[word]! & (1 << (offset & 31))) !== 0;
  }
}
