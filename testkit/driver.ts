import type { Topology } from '../src/dsl/topology.js';
import { json, type Serde } from '../src/dsl/serde.js';
import { Engine, type CommitPolicy, type ParkedKeyInfo } from '../src/engine/engine.js';
import { combineObservers } from '../src/engine/combineObservers.js';
import type { EffectRecord } from '../src/engine/outputs.js';
import type { EngineStatus } from '../src/engine/engineStatus.js';
import type { EngineObserver } from '../src/engine/outcomes.js';
import type { ParkedEvent, ParkedKeyState, Resolution } from '../src/engine/parkedKeys.js';
import { stateKeys } from '../src/state/stateKeys.js';
import type { Timer } from '../src/ports/clock.js';
import { PartitionResetError, type CommitOffset, type TopicPartition } from '../src/ports/log.js';
import type { StoreOp } from '../src/ports/store.js';
import { openLevelStore, openMemoryStore } from '../src/state/levelStore.js';
import { decodeRecord } from '../src/engine/stages/decode.js';
import { crashPhase, crashPoints, type CrashPoint, type IoRequest } from './crashPoints.js';
import { everyOptionOf, nearest, optionsProblem } from '../src/graph/optionNames.js';
import { checkResolution } from '../src/engine/checkResolution.js';
import { DriverIo, type PendingIo } from './driverIo.js';
import { DriverConsumer, GatedStore, type StoreFaults } from './driverPorts.js';
import { DriverTransaction } from './driverTransaction.js';
import { LandedOverlay } from './landedOverlay.js';
import {
  DriverObservations,
  type AppliedEffect,
  type CommitObserved,
  type DiscardObserved,
  type DriverBreaches,
  type DriverMetrics,
  type ObservedModelCall,
  type ObservedOutcome,
  type ResolutionObserved,
} from './driverObservations.js';
import { MemoryLog } from './memoryLog.js';
import { isRefusedWrite, RefusedWrites } from './refusedWrites.js';
import { SeededRandom } from './seededRandom.js';
import { TestInputTopic, TestOutputTopic } from './topics.js';
import { VirtualClock } from './virtualClock.js';
import { WriteBehindStore } from './writeBehindStore.js';
import { shown } from '../src/graph/shown.js';

/** Options of {@link TopologyTestDriver}. */
export interface DriverOptions {
  /** Partitions of every topic. @defaultValue 1 */
  partitions?: number;
  /** Seeds the engine's Random port. The same seed and inputs give the same history. @defaultValue 0 */
  seed?: number;
  /**
   * Keep the state in LevelDB in this directory; without it, in memory-level (gone with the
   * driver). The directory must be new or empty: the driver's log is in memory and starts at
   * offset 0 again, so the effect records an earlier driver left would mark every event a
   * DUPLICATE. A driver's own {@link TopologyTestDriver.crash} and {@link TopologyTestDriver.restart}
   * reopen it, as a restarted worker does; a new driver refuses a directory that holds state.
   */
  stateDir?: string;
  /**
   * Opens a `stateDir` that holds state already, as it is: for a test that reads state written on
   * purpose (an older version's, a fixture's), knowing the events at the stored offsets are then
   * found applied. @defaultValue false: a non-empty `stateDir` is refused
   */
  reuseStateDir?: boolean;
  /** @defaultValue `{ everyMs: 5000 }` */
  commit?: CommitPolicy;
  /** Records per partition per poll. @defaultValue 500 */
  maxPollRecords?: number;
  /** @defaultValue 1000 */
  maxBufferedPerPartition?: number;
  /** The engine's `commitMetadataMaxBytes` (the log's own limit, as a broker's default, is 4096 with the client's NUL byte). @defaultValue 4095 */
  commitMetadataMaxBytes?: number;
  /**
   * Positions in each partition's ring of effect records: a small ring wraps within a few events,
   * so that a test sees records replaced at their positions and the commits the ring asks for.
   * Keep it for the driver's life (restarts included). @defaultValue 16384
   */
  effectRingSize?: number;
  /** The engine's `effectRing`: false records every effect under its effect id, as orderly before rings did. @defaultValue true */
  effectRing?: boolean;
  /**
   * How long each partition's restore takes, in virtual ms, as the changelog store restores a
   * partition's state before the engine runs it. With it, every partition an engine instance is
   * given (at its start, after a rebalance, after an exactly-once reset) is restored on its own,
   * the others running meanwhile; a crash, a stop or a rebalance can come while it restores (the
   * crash point `restoring` is its end), and rebalance steps wait for the restores under way, as
   * Kafka's log's do. A function gives each partition its own. @defaultValue no restores
   */
  restoreMs?: number | ((partition: number) => number);
  /**
   * Which capabilities the ports have, as on Kafka: `plain` (a store batch is durable once
   * written), `staged` (the store stages its batches: a batch lands at once, and becomes durable
   * through its acknowledgement later, as the changelog store's at-least-once path) or
   * `exactlyOnce` (staged, over a transactional log: outputs, state writes and offsets commit
   * together in one transaction, which a crash aborts). @defaultValue 'plain'
   */
  mode?: DriverMode;
  /**
   * Faults of the simulated log that break orderly's contract on purpose, for canary tests that
   * prove the invariants catch them. `commitAheadBy`: every commit lands that many offsets further
   * than asked (within what was polled), as a consumer that commits what it has not finished would.
   * `refuseCommits`: the first that many commits are refused as a rebalance would refuse them
   * (CommitRefusedError), which the engine must survive. `splitEffectBatch`: a batch that records
   * an effect is written as two, with a crash point between: `state-first` (the effect's state
   * writes, then its effect record: a crash between leaves the effect applied but not recorded, so
   * it is applied again) or `record-first` (a crash between leaves it recorded but its state lost).
   * `durableAtLanding` (staged): a batch says it is durable as soon as it has landed, so an event
   * finishes (and is committed) before its write is. `offsetsOutsideTransaction` (exactly-once):
   * offsets are committed outside the transaction. `dropWrite`: the store leaves out the writes it
   * matches, as an engine that skipped them would. `metadataListsUnfinished`: each commit's
   * metadata lists one more offset as finished, an unfinished one polled above the committed
   * offset, as an engine that listed what it had not finished would (a restart skips it).
   * `pruneAheadOfCommit`: a batch that prunes effect records of a partition (or replaces one at
   * its ring position) deletes all of them, those at or above the committed offset too, as an
   * engine that pruned past its commit would.
   */
  faults?: DriverFaults;
  /** Hears every engine instance's outcomes, model calls and commits too (a metrics exporter, say). */
  observer?: EngineObserver;
}

/** See {@link DriverOptions.mode}. */
export type DriverMode = 'plain' | 'staged' | 'exactlyOnce';
export const driverModes: readonly DriverMode[] = ['plain', 'staged', 'exactlyOnce'];

/** See {@link DriverOptions.faults}. */
export interface DriverFaults extends StoreFaults {
  readonly commitAheadBy?: number;
  readonly refuseCommits?: number;
  /** Each commit's metadata lists one unfinished offset as finished, which a restart would skip (see {@link DriverOptions.faults}). */
  readonly metadataListsUnfinished?: boolean;
  /** Exactly-once: a commit sends the offsets to the group at once, outside the transaction that holds the records and state writes. */
  readonly offsetsOutsideTransaction?: boolean;
  /** Exactly-once: an instance fenced out of its group (see {@link TopologyTestDriver.fence}) keeps a producer that commits its transactions. */
  readonly unfencedProducer?: boolean;
  /**
   * After a write refused for good ({@link TopologyTestDriver.refuseWrite}), the instance's later
   * writes are still acknowledged, as librdkafka's idempotent producer without
   * `enable.gapless.guarantee` goes on after a record the broker refused: a gap in the changelog.
   */
  readonly changelogGaps?: boolean;
  /** Exactly-once: the reset after an aborted transaction keeps the instance's landed writes, as a worker that did not restore its state from the changelog would. */
  readonly resetKeepsLocalState?: boolean;
}

/** A crash set for later with {@link TopologyTestDriver.crash}: cancel() forgets it if it has not happened. */
export interface PendingCrash {
  cancel(): void;
}

/** Where the driver stands between crashes and restarts (see {@link TopologyTestDriver.restartState}). */
export interface RestartState {
  /** The current or last engine instance: 1 for the first, one more at each restart; 0 before the first starts. */
  readonly generation: number;
  readonly running: boolean;
  /** A restart() asked for and not started yet. */
  readonly restartPending: boolean;
  /** Crashes set for later (at a time or a named point) that have not happened. */
  readonly crashesPending: number;
}

/** Every option of {@link DriverOptions}: another name is refused (a misspelt option is otherwise ignored in plain JavaScript). */
const DRIVER_OPTIONS = everyOptionOf<DriverOptions>()([
  'partitions',
  'seed',
  'stateDir',
  'reuseStateDir',
  'commit',
  'maxPollRecords',
  'maxBufferedPerPartition',
  'commitMetadataMaxBytes',
  'effectRingSize',
  'effectRing',
  'restoreMs',
  'mode',
  'faults',
  'observer',
]);

/** Where and when to crash. With neither, the engine crashes now. */
export interface CrashOptions {
  /** At this virtual time (ms since the driver started). */
  at?: number;
  /** At the `nth` (default first) time the engine reaches this point from now on. */
  point?: CrashPoint;
  nth?: number;
}

interface Instance {
  readonly id: string;
  readonly engine: Engine;
  readonly consumer: DriverConsumer;
  alive: boolean;
  /** Stopping after a fatal error the driver caused on purpose (a refused write), as its worker would. */
  stopping?: Promise<void>;
}

/**
 * Drives the real engine over an in-memory, partitioned log on a virtual clock, with its state in
 * LevelDB or memory-level, deterministic from a seed. Unlike Kafka Streams' driver it does not
 * commit after every record: it commits as the engine asks, and it can crash the engine at a
 * virtual time or at a named point between two durable steps, then restart it from the committed
 * offsets over the same state, so every crash window can be shown.
 *
 * Its ports offer what Kafka's offer, chosen by {@link DriverOptions.mode}: a plain store, a
 * staged one (a batch lands, then becomes durable through its acknowledgement, with a crash point
 * between) and a transactional log (outputs, state writes and offsets in one transaction, which a
 * crash aborts).
 *
 * Where it differs from production: one consumer owns every partition (rebalances only when a test
 * calls {@link TopologyTestDriver.revoke} and {@link TopologyTestDriver.assign}), every
 * asynchronous port operation runs alone and in request order (staged, the acknowledgements run in
 * their own order, interleaved with the others from the seed), a durable batch is done once it is
 * in the driver's write-behind view of the state (LevelDB gets it in the background, in order;
 * see {@link WriteBehindStore}), a staged batch is acknowledged whole (Kafka may keep part of one
 * batch's changelog records after a crash), and records reach the engine in polls of up to
 * `maxPollRecords` per partition.
 */
export class TopologyTestDriver {
  private readonly clock = new VirtualClock();
  private readonly io: DriverIo;
  private readonly mode: DriverMode;
  private readonly log: MemoryLog;
  private readonly random: SeededRandom;
  private readonly observations: DriverObservations;
  private readonly actions: Array<() => Promise<void>> = [];
  private state: WriteBehindStore | undefined;
  private instance: Instance | undefined;
  private generation = 0;
  private armed: { point: CrashPoint; remaining: number } | undefined;
  private readonly crashTimers = new Set<Timer>();
  private restartsPending = 0;
  private failure: Error | undefined;
  private starting: Promise<void> | undefined;
  private commitRefusalsLeft: number | undefined;
  /** Instances fenced out of the group that may still be running (see {@link fence}). */
  private readonly fencedOut = new Set<string>();
  private readonly refusals: RefusedWrites;

  constructor(
    readonly topology: Topology,
    private readonly options: DriverOptions = {},
  ) {
    const problem = optionsProblem(options, DRIVER_OPTIONS);
    if (problem !== undefined) throw new TypeError(`TopologyTestDriver: ${problem}`);
    const partitions = options.partitions ?? 1;
    if (!Number.isInteger(partitions) || partitions < 1)
      throw new RangeError(`TopologyTestDriver: partitions must be a whole number of at least 1, got ${partitions}`);
    this.log = new MemoryLog(partitions);
    this.log.partitions(topology.source.topic);
    if (options.stateDir !== undefined && options.reuseStateDir !== true) refuseUsedStateDir(options.stateDir);
    this.random = new SeededRandom(options.seed ?? 0);
    this.mode = options.mode ?? 'plain';
    if (!driverModes.includes(this.mode)) throw new RangeError(`TopologyTestDriver: mode must be one of ${driverModes.join(', ')}, got ${shown(options.mode)}`);
    const restoreMs = options.restoreMs;
    if (typeof restoreMs === 'number') validRestoreMs(restoreMs);
    else if (restoreMs !== undefined && typeof restoreMs !== 'function')
      throw new TypeError(`TopologyTestDriver: restoreMs is a number of ms or a function of the partition, got ${shown(restoreMs)}`);
    // Plain, every operation runs in request order; staged, acknowledgements interleave with them.
    this.io = new DriverIo(this.mode === 'plain' ? undefined : this.random.derive('io'));
    this.observations = new DriverObservations(topology, (partition, offset) => this.declaredEffectIdAt(partition, offset));
    this.refusals = new RefusedWrites(this.mode !== 'exactlyOnce' && options.faults?.changelogGaps !== true);
  }

  /** Writes to the topology's source topic; any other name is refused (nothing would read it). */
  createInputTopic<T>(name: string, options: { value?: Serde<T> } = {}): TestInputTopic<T> {
    const source = this.topology.source.topic;
    if (name !== source) {
      throw new Error(`TopologyTestDriver.createInputTopic: the topology reads only '${source}', not '${name}'; use createInputTopic('${source}')`);
    }
    return new TestInputTopic(name, this.log, options.value ?? json<T>(), () => this.clock.now());
  }

  /**
   * Reads one of the topics the topology writes: its outputs, parking and dead-letter topics.
   * Without `value`, a record's value is decoded as JSON where it is JSON, given as its text where
   * it is not (a dead letter keeps the source record's value as it came), and as its bytes where
   * it is not UTF-8. A topic of plain text reads as text with `{ value: string() }` (without it,
   * the text `42` reads as the number 42).
   */
  createOutputTopic<T>(name: string, options: { value?: Serde<T> } = {}): TestOutputTopic<T> {
    const written = this.topology.outputTopics;
    if (!written.includes(name)) {
      throw new Error(`TopologyTestDriver.createOutputTopic: the topology never writes '${name}'; it writes ${written.map((t) => `'${t}'`).join(', ')}`);
    }
    return new TestOutputTopic(name, this.log, options.value ?? (jsonWhereJson as Serde<T>));
  }

  /** Virtual ms since the driver started. */
  now(): number {
    return this.clock.now();
  }

  /** Runs until nothing is left to do: no record to deliver, no operation waiting, no timer but background ones. */
  async runUntilIdle(): Promise<void> {
    await this.run(Infinity);
    if (this.instance?.alive && this.instance.engine.inFlight > 0) {
      throw new Error(
        `TopologyTestDriver: ${this.instance.engine.inFlight} events are in flight and nothing is scheduled${this.unansweredCalls()}: ` +
          'a decide or effect function awaits something other than ctx.clock (wait with sleep(ctx.clock, ms, ctx.signal): ' +
          "DecideContext and EffectContext both have the clock). On Kafka such a call would hold its key until its timeoutMs (the agentStep's or the effect's options) fails it",
      );
    }
  }

  /** `; unanswered: step 's' for effect id …`, for the calls of this instance whose event has had no outcome since. */
  private unansweredCalls(): string {
    const generation = this.generation;
    // Each event's last call, unless an outcome of the event came at or after it (a call that
    // answered and failed gets a RETRY then; the next one is a later call).
    const lastCall = new Map<string, { step: string; atMs: number }>();
    for (const call of this.observations.modelCalls) if (call.instance === generation) lastCall.set(call.effectId, call);
    for (const outcome of this.observations.history) {
      const call = outcome.instance === generation ? lastCall.get(outcome.effectId) : undefined;
      if (call && outcome.atMs >= call.atMs) lastCall.delete(outcome.effectId);
    }
    const effect = this.topology.applyOnce ? `the effect '${this.topology.applyOnce.name}'` : 'the operators';
    const named = [...lastCall].slice(0, 3).map(([effectId, call]) => {
      const endedAt = this.observations.callsEnded.get(`${generation}|${call.step}|${effectId}`);
      return endedAt !== undefined && endedAt >= call.atMs
        ? `effect id ${effectId}: step '${call.step}' answered, and what follows it (${effect}, or a later step) has not ended`
        : `step '${call.step}' for effect id ${effectId} has not answered`;
    });
    if (named.length === 0) return '';
    return `; unended: ${named.join('; ')}${lastCall.size > named.length ? `; and ${lastCall.size - named.length} more` : ''}`;
  }

  /** Moves virtual time forward by `ms`, doing everything that falls due on the way. */
  async advanceWallClockTime(ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`advanceWallClockTime: ms must be 0 or more, got ${ms}`);
    await this.run(this.clock.now() + ms);
  }

  /**
   * Crashes the engine now, at a virtual time, or at a named crash point. Its work in flight never
   * lands. A crash set for later can be cancelled through what this returns (or all at once with
   * {@link TopologyTestDriver.disarm}).
   */
  crash(options: CrashOptions = {}): PendingCrash {
    checkCrashOptions(options);
    if (options.point !== undefined && !this.canCrashAt(options.point)) {
      throw new RangeError(
        `TopologyTestDriver.crash: this driver never reaches the point '${options.point}' (${unreachableWhy(options.point)}), so the crash would never come`,
      );
    }
    if (options.point !== undefined) {
      const armed = { point: options.point, remaining: options.nth ?? 1 };
      this.armed = armed;
      return { cancel: () => void (this.armed === armed && (this.armed = undefined)) };
    }
    if (options.at !== undefined && options.at > this.clock.now()) {
      const timer = this.clock.view('driver').setTimer(options.at - this.clock.now(), () => {
        this.crashTimers.delete(timer);
        this.crashNow();
      });
      this.crashTimers.add(timer);
      return {
        cancel: () => {
          timer.cancel();
          this.crashTimers.delete(timer);
        },
      };
    }
    this.crashNow();
    return { cancel: () => undefined };
  }

  /**
   * Whether this driver's engine can reach a crash point: `transaction-open` and
   * `transaction-committed` in mode `exactlyOnce`, `landed-not-durable` in modes `staged` and
   * `exactlyOnce`, `restoring` with `restoreMs`; the others in every mode.
   */
  canCrashAt(point: CrashPoint): boolean {
    switch (point) {
      case 'transaction-open':
      case 'transaction-committed':
        return this.mode === 'exactlyOnce';
      case 'landed-not-durable':
        return this.mode !== 'plain';
      case 'restoring':
        return this.options.restoreMs !== undefined;
      default:
        return true;
    }
  }

  /** Starts a new engine from the committed offsets over the same state, now or `after` ms from now. */
  restart(options: { after?: number } = {}): void {
    if (options.after !== undefined && !(Number.isFinite(options.after) && options.after >= 0)) {
      throw new RangeError(`TopologyTestDriver.restart: after must be 0 or more ms, got ${shown(options.after)}`);
    }
    this.restartsPending += 1;
    const restart = () =>
      this.actions.push(() => {
        this.restartsPending -= 1;
        return this.restartNow();
      });
    if (options.after) this.clock.view('driver').setTimer(options.after, restart);
    else restart();
  }

  /** The engine instance, whether it runs, and what is pending: for a test that crashes at random to know where it stands. */
  restartState(): RestartState {
    return {
      generation: this.generation,
      running: this.running,
      restartPending: this.restartsPending > 0,
      crashesPending: this.crashTimers.size + (this.armed ? 1 : 0),
    };
  }

  /** The source partitions the running engine holds (none while it is crashed). */
  assigned(): number[] {
    return this.instance?.alive ? this.instance.consumer.assigned().map((tp) => tp.partition) : [];
  }

  /**
   * Takes partitions of the source topic away from the engine, as a rebalance does, and runs until
   * the engine has let them go. `lost`: taken without a chance to commit (a missed session timeout).
   */
  async revoke(partitions: readonly number[], options: { lost?: boolean } = {}): Promise<void> {
    const instance = this.requireLive('revoke');
    await this.runUntilSettled('revoke', instance.consumer.revoke(this.sourcePartitions(partitions), options.lost ?? false));
  }

  /** Gives partitions of the source topic back to the engine, from the committed offsets, and runs until they are restored. */
  async assign(partitions: readonly number[]): Promise<void> {
    const instance = this.requireLive('assign');
    await this.runUntilSettled('assign', instance.consumer.assign(this.sourcePartitions(partitions)));
  }

  private sourcePartitions(partitions: readonly number[]) {
    const topic = this.topology.source.topic;
    return partitions.map((partition) => ({ topic, partition }));
  }

  /** Runs the driver until `done` settles (the only way an engine call that needs port operations can). */
  private async runUntilSettled(what: string, done: Promise<void>): Promise<void> {
    let settled = false;
    done.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (;;) {
      // Let what is settling settle before the next step, which may move virtual time.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (settled || !(await this.step(Infinity))) break;
    }
    if (!settled) throw new Error(`TopologyTestDriver.${what}: it never settled (the engine crashed, or waits on something other than ctx.clock)`);
    await done;
  }

  /**
   * Stops the engine as a worker stops on SIGTERM ({@link Engine.stop}): its work in flight runs
   * for `graceMs` and is then given up, the finished prefix is committed. Runs until the stop has
   * settled; restart() starts a new engine as after a crash.
   */
  async stop(options: { graceMs?: number } = {}): Promise<void> {
    const instance = this.requireLive('stop');
    // Already stopping on a fatal error (a refused write): that stop ends it; none starts twice.
    if (!instance.stopping) {
      this.observations.stopped();
      instance.stopping = instance.engine.stop(options);
    }
    await this.runUntilSettled('stop', instance.stopping);
    // Stopped, not crashed: metrics().stops counts it, crashes does not.
    this.crashNow(false);
  }

  /**
   * Fences the engine out of its group without telling it, as when a worker is frozen past its
   * session timeout: it receives no more records, its commits are refused (exactly-once: its
   * producer is fenced, which stops it at its next commit), and its work in flight goes on,
   * writing to the state, until it hears its partitions lost `lostAfterMs` later. Meanwhile
   * {@link restart} starts the new owner, which the old one then races. On an at-least-once path
   * the old one's late writes can apply an event the new owner applies too: a documented limit
   * (docs/guarantees.md); exactly-once fences them.
   */
  fence(options: { lostAfterMs?: number } = {}): void {
    const zombie = this.requireLive('fence');
    this.fencedOut.add(zombie.id);
    this.observations.fencedOut(this.generation);
    zombie.consumer.fenceOut();
    this.instance = undefined;
    // Not awaited: its engine gives up its work in flight as the driver runs.
    const lose = async () => void zombie.consumer.loseAll().catch(() => undefined);
    this.clock.view('driver').setTimer(options.lostAfterMs ?? 0, () => this.actions.push(lose));
  }

  /**
   * Kafka refuses the changelog records of the `nth` (default first) staged write from now on for
   * good (larger than the topic's max.message.bytes, say). As orderly's producer does without
   * transactions (gap-less), every later write and produce of that engine instance fails too,
   * the engine stops on the error, as its worker does (committing its finished prefix), and a
   * {@link TopologyTestDriver.restart} starts a new one, as a supervisor restarts the worker once the topic is fixed.
   */
  refuseWrite(options: { nth?: number } = {}): void {
    if (this.mode === 'plain')
      throw new Error("TopologyTestDriver.refuseWrite: a plain store has no changelog to refuse a write; use mode 'staged' or 'exactlyOnce'");
    this.refusals.arm(options.nth ?? 1);
  }

  /** Forgets every crash set for later (armed at a point never reached, or at a time not come yet) and a refused write armed and never reached. */
  disarm(): void {
    this.armed = undefined;
    this.refusals.disarm();
    for (const timer of this.crashTimers) timer.cancel();
    this.crashTimers.clear();
  }

  /** False between a crash and the restart. */
  get running(): boolean {
    return this.instance?.alive ?? false;
  }

  /** The event at the head of a parked key: the one a resolution decides. */
  parkedHead(partition: number, lane: string): ParkedEvent {
    if (this.instance?.alive) {
      const { engine, consumer } = this.instance;
      if (this.topology.park && consumer.ready(partition)) this.requireParkedOn(engine.parked(), partition, lane, 'parkedHead');
      return engine.parkedHead(partition, lane);
    }
    // Crashed: the head as the durable state holds it, which the next engine will find.
    const key = this.parkedKeyInState(partition, lane);
    const state = key && (this.observations.parkedState.get(key) as ParkedKeyState | undefined);
    const park = this.topology.park;
    const head =
      state &&
      park &&
      (this.observations.parkedState.get(stateKeys.heldEvent(park.name, { topic: this.topology.source.topic, partition }, lane, state.headSeq)) as
        ParkedEvent | undefined);
    if (!head)
      throw new Error(`TopologyTestDriver.parkedHead: key '${lane}' of partition ${partition} is not parked (in the durable state, the engine being crashed)`);
    return head;
  }

  /**
   * Resolves a parked key; the replay runs as the driver runs. While the engine is crashed with a
   * restart pending, it runs the driver until the restarted engine has restored the partition,
   * then resolves there, as a person's resolution waits for the worker to come back.
   *
   * @param partition - The source topic's partition the key is parked on (the `partition` of its
   *   entry in {@link TopologyTestDriver.parked}).
   * @param lane - The parked key's lane, as {@link TopologyTestDriver.parked} lists it (its `lane`):
   *   the record's key for a keyed event; for an event with a null key (a lane of its own) it is
   *   `~no-key/<offset>`, the event's offset on its partition (`~no-key/0` for offset 0).
   * @param resolution - Exactly one of `{ decision }`, `{ retry: true }` and `{ discard: true }`.
   */
  async resolve(partition: number, lane: string, resolution: Resolution): Promise<void> {
    if (!this.instance?.alive && this.restartsPending > 0) {
      while (!(this.instance?.alive && this.instance.consumer.ready(partition)) && (await this.step(Infinity)));
    }
    checkResolution(`resolve key '${lane}' of partition ${partition}`, resolution);
    const count = this.log.partitions(this.topology.source.topic).length;
    if (!Number.isInteger(partition) || partition < 0 || partition >= count) {
      throw new RangeError(
        `TopologyTestDriver.resolve: topic '${this.topology.source.topic}' has partitions 0 to ${count - 1}; there is no partition ${shown(partition)}`,
      );
    }
    const instance = this.requireLive('resolve');
    if (this.topology.park && instance.consumer.ready(partition)) this.requireParkedOn(instance.engine.parked(), partition, lane, 'resolve');
    const done = instance.engine.resolve(partition, lane, resolution);
    let settled = false;
    done.then(
      () => (settled = true),
      () => (settled = true),
    );
    while (!settled && (await this.step(Infinity)));
    if (!settled) throw new Error('TopologyTestDriver.resolve: the engine crashed before the resolution was recorded; restart() it and resolve again');
    await done;
    this.observations.resolved({ partition, key: lane, resolution }, this.clock.now());
  }

  /** Throws unless `lane` is parked on `partition`, naming the partition it is parked on instead, if any. */
  private requireParkedOn(parked: readonly ParkedKeyInfo[], partition: number, lane: string, call: 'resolve' | 'parkedHead'): void {
    if (parked.some((k) => k.partition === partition && k.lane === lane)) return;
    const topic = this.topology.source.topic;
    const elsewhere = [...new Set(parked.filter((k) => k.lane === lane).map((k) => k.partition))];
    const lanes = [...new Set(parked.map((k) => `'${k.lane}' on ${topic}/${k.partition}`))];
    const listed = lanes.length === 0 ? 'none' : lanes.length <= 5 ? lanes.join(', ') : `${lanes.slice(0, 5).join(', ')} and ${lanes.length - 5} more`;
    throw new Error(
      `${call}: key '${lane}' of ${topic}/${partition} is not parked; ` +
        (elsewhere.length > 0
          ? `it is parked on ${elsewhere.map((p) => `${topic}/${p}: ${call}(${p}, '${lane}'${call === 'resolve' ? ', ...' : ''})`).join(' or ')}`
          : `it is not parked on any partition of ${topic} (parked now: ${listed}); an event with a null key is parked under its lane '~no-key/<offset>', as parked() lists it`),
    );
  }

  /**
   * Every outcome, in the order it happened, across restarts, with the instance that reported it.
   * A PARKED reported again for an event an earlier instance had parked (a redelivery after a
   * crash found it parked) carries `again: true`; a new parking does not.
   */
  history(): readonly ObservedOutcome[] {
    return this.observations.history;
  }

  /** Resolutions recorded through {@link TopologyTestDriver.resolve}, in order, with when each was recorded. */
  resolutions(): readonly ResolutionObserved[] {
    return this.observations.resolutions;
  }

  /**
   * Effect ids of parked and held events whose hold the store deleted: a resolved key's replay
   * ended them. The only durable trace of a replayed event that ended without an effect (filtered,
   * say) when a crash came before its outcome was reported.
   */
  releasedFromHold(): ReadonlySet<string> {
    return this.observations.releasedFromHold;
  }

  /** Parked events discarded by a resolution, in the order the store received them, with when. */
  discards(): readonly DiscardObserved[] {
    return this.observations.discards;
  }

  /** Records delivered again after a crash, with the virtual time of each delivery. */
  redeliveries(): readonly (TopicPartition & { offset: number; key: string | null; atMs: number })[] {
    return this.observations.redeliveries;
  }

  /**
   * The commit timeline: every commit that reached the log, in order, with the offset asked, the
   * offset the log held before and after, the instance that asked and when.
   */
  commits(): readonly CommitObserved[] {
    return this.observations.commits;
  }

  /** Every effect recorded, in the order the store received them. */
  effects(): readonly AppliedEffect[] {
    return this.observations.effects;
  }

  /** Every call of the agent step, in the order the engines issued them, with the instance that issued each. */
  modelCalls(): readonly ObservedModelCall[] {
    return this.observations.modelCalls;
  }

  /**
   * The stored entries whose keys start with `prefix`, as a restart would find them (the state's
   * durable part), in key order. For invariants that compare the state with the effects recorded.
   */
  async storedEntries<T>(prefix: string): Promise<Array<[string, T]>> {
    if (!this.state) return [];
    return this.state.entries<T>(prefix);
  }

  /**
   * The effect records the engine pruned once no event could need them (below the committed
   * offset, or declared ids past their retention), by state key, as they were before: durable
   * deletes only. For invariants that compare the state with the effects recorded.
   */
  prunedEffectRecords(): ReadonlyMap<string, EffectRecord> {
    return this.observations.prunedEffects();
  }

  /**
   * Tells the driver that a durable step's function began to run: a test's stand-in for the
   * outside system calls it from inside the step, with the decide's context. A run that begins
   * after the step's journal entry was durable is a breach ({@link DriverMetrics.stepsRunAgain}).
   */
  stepRan(ctx: { readonly instance?: string; readonly effectId: string }, agentStep: string, step: string): void {
    const instance = ctx.instance?.startsWith('engine-') ? Number(ctx.instance.slice('engine-'.length)) : this.generation;
    this.observations.stepRan(instance, agentStep, ctx.effectId, step, this.clock.now());
  }

  /** Effect ids of the parked events discarded by a resolution. */
  discarded(): ReadonlySet<string> {
    return this.observations.discarded;
  }

  /** The group's committed offset of each partition of the source topic, with its metadata when it has some (the finished offsets above it). */
  committed(): CommitOffset[] {
    const topic = this.topology.source.topic;
    return this.log.partitions(topic).map((_, partition) => this.log.committedWithMetadata({ topic, partition }));
  }

  /**
   * The parked keys, as the running engine holds them; while it is crashed, as the durable state
   * holds them (what the next engine will find).
   */
  parked(): ParkedKeyInfo[] {
    if (this.instance?.alive) return this.instance.engine.parked();
    const found: ParkedKeyInfo[] = [];
    for (const [key, value] of this.observations.parkedState) {
      if (!key.startsWith('parked/')) continue;
      const { topic, partition } = stateKeys.parse(key);
      found.push({ ...(value as ParkedKeyState), topic, partition });
    }
    return found;
  }

  /** The state key of a parked key, if the topology parks. */
  private parkedKeyInState(partition: number, lane: string): string | undefined {
    const park = this.topology.park;
    return park && stateKeys.parkedKey(park.name, { topic: this.topology.source.topic, partition }, lane);
  }

  metrics(): DriverMetrics {
    return this.observations.metrics();
  }

  /** The first few of each breach that {@link TopologyTestDriver.metrics} counts, in words: which key, which offsets, what happened when. */
  observedBreaches(): DriverBreaches {
    return this.observations.breaches;
  }

  /** What the running engine holds now (its `Engine.status()`). */
  status(): EngineStatus {
    return this.requireLive('status').engine.status();
  }

  /** Stops the engine where it is and closes the state. */
  async close(): Promise<void> {
    if (this.instance?.alive) this.crashNow();
    await this.state?.close();
    this.state = undefined;
  }

  private async run(untilMs: number): Promise<void> {
    this.starting ??= this.start();
    await this.starting;
    for (;;) {
      if (!(await this.step(untilMs))) break;
    }
    // Idle means written, too: every batch the engine was told is durable is in LevelDB.
    await this.state?.drained();
    this.clock.advanceTo(untilMs === Infinity ? this.clock.now() : untilMs);
  }

  /** Does the next thing there is to do; false when there is none before `untilMs`. */
  private async step(untilMs: number): Promise<boolean> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.failure ??= this.state?.failed;
    if (this.failure) throw this.failure;
    const action = this.actions.shift();
    if (action) {
      await action();
      return true;
    }
    const pending = this.io.next();
    if (pending) {
      await this.execute(pending);
      return true;
    }
    if (this.instance?.alive && this.instance.consumer.poll(this.options.maxPollRecords ?? 500) > 0) return true;
    const due = this.clock.nextDueMs();
    if (due === undefined || due > untilMs) return false;
    return this.clock.fireNext(untilMs);
  }

  private async start(): Promise<void> {
    this.state = await this.openState();
    this.startInstance();
  }

  private async openState(): Promise<WriteBehindStore> {
    return new WriteBehindStore(await (this.options.stateDir ? openLevelStore(this.options.stateDir) : openMemoryStore()));
  }

  private startInstance(): void {
    const id = `engine-${++this.generation}`;
    const generation = this.generation;
    const faults = this.options.faults ?? {};
    const restoreMs = this.options.restoreMs;
    const state = () => this.state!;
    const madeDurable = (ops: readonly StoreOp[]) => this.observations.written(ops, generation, this.clock.now());
    // A new instance has nothing landed and no transaction open: what the crashed one had is gone.
    const overlay = this.mode === 'plain' ? undefined : new LandedOverlay(state);
    const clock = this.clock.view(id);
    let consumer: DriverConsumer | undefined;
    const transaction =
      this.mode === 'exactlyOnce'
        ? new DriverTransaction(
            overlay!,
            state,
            this.log,
            () => this.clock.now(),
            madeDurable,
            () => consumer?.transactionOpened(),
          )
        : undefined;
    consumer = new DriverConsumer(
      id,
      this.io,
      this.log,
      () => this.clock.now(),
      (record) => this.observations.delivered(record, this.clock.now()),
      {
        ...(transaction ? { transaction, clock } : {}),
        ...(faults.commitAheadBy ? { commitAheadBy: faults.commitAheadBy } : {}),
        ...(faults.metadataListsUnfinished ? { metadataListsUnfinished: true } : {}),
        refuseCommits: this.refuseCommits(),
        ...(faults.offsetsOutsideTransaction ? { offsetsOutsideTransaction: true } : {}),
        ...(faults.unfencedProducer ? { unfencedProducer: true } : {}),
        ...(faults.resetKeepsLocalState ? { resetKeepsLocalState: true } : {}),
        onReset: (reset) => this.observations.reset(reset),
      },
    );
    const store = new GatedStore(id, this.io, {
      state,
      ...(overlay ? { overlay } : {}),
      ...(transaction ? { transaction } : {}),
      acknowledged: (ops) => this.observations.acknowledged(ops),
      madeDurable,
      faults,
      ...(restoreMs === undefined
        ? {}
        : {
            restore: {
              clock,
              ms: typeof restoreMs === 'number' ? () => restoreMs : (p: number) => validRestoreMs(restoreMs(p), p),
              observe: (what: 'begun' | 'abandoned') => this.observations.restore(what),
            },
          }),
    });
    const engine = new Engine({
      topology: this.topology,
      log: consumer,
      clock,
      store,
      random: this.random.derive(id),
      // A fenced instance stopping on its fenced producer is what fencing is for, not a failure;
      // nor is one stopping on a write the driver refused.
      instance: id,
      observer: combineObservers(
        this.observations.observer(this.generation, (error) => this.failed(id, error)),
        this.options.observer,
      ),
      ...(this.options.commit ? { commit: this.options.commit } : {}),
      ...(this.options.maxBufferedPerPartition ? { maxBufferedPerPartition: this.options.maxBufferedPerPartition } : {}),
      ...(this.options.effectRingSize ? { effectRingSize: this.options.effectRingSize } : {}),
      ...(this.options.effectRing === false ? { effectRing: false } : {}),
      ...(this.options.commitMetadataMaxBytes !== undefined ? { commitMetadataMaxBytes: this.options.commitMetadataMaxBytes } : {}),
    });
    this.instance = { id, engine, consumer, alive: true };
    engine.start().catch((error: Error) => this.failed(id, error));
  }

  /** An engine instance failed: a driver failure, unless the driver made it fail on purpose. */
  private failed(id: string, error: Error): void {
    if (this.fencedOut.has(id)) return;
    if (!isRefusedWrite(error)) {
      this.failure ??= error;
      return;
    }
    // As its worker does on a fatal error: the engine stops (committing its finished prefix), then the process ends.
    const instance = this.instance;
    if (instance?.id !== id || !instance.alive || instance.stopping) return;
    instance.stopping = instance.engine
      .stop()
      .catch(() => undefined)
      .then(() => {
        if (this.instance === instance) this.crashNow();
      });
  }

  /** Commit refusals left to make, shared by the engine instances of this driver. */
  private refuseCommits(): number {
    const left = this.commitRefusalsLeft ?? this.options.faults?.refuseCommits ?? 0;
    this.commitRefusalsLeft = 0;
    return left;
  }

  private async execute(pending: PendingIo): Promise<void> {
    // Crash points are the running instance's; a fenced one's operations run as they come.
    const phase = pending.owner === this.instance?.id ? this.crashPhaseOf(pending.request) : undefined;
    if (phase === 'before') return this.crashNow();
    const request = pending.request;
    const refused = this.refusals.verdict(pending.owner, request, pending.owner === this.instance?.id);
    if (refused) return this.refuse(pending, refused);
    let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
    const before = request.kind === 'commit' ? request.offsets.map((tp) => this.log.committed(tp)) : [];
    const instance = Number(pending.owner.slice('engine-'.length));
    try {
      outcome = { ok: true, value: await pending.execute() };
    } catch (error) {
      outcome = { ok: false, error };
    }
    if (request.kind === 'commit') {
      // Check what the log holds now, not what was asked: a faulty log may have committed more.
      const commits = request.offsets.map((tp, i) => {
        const { offset: to, metadata } = this.log.committedWithMetadata(tp);
        return { topic: tp.topic, partition: tp.partition, asked: tp.offset, from: before[i]!, to, ...(metadata ? { metadata } : {}) };
      });
      this.observations.committed(commits, instance, outcome.ok, this.clock.now());
    }
    if (phase === 'after') return this.crashNow();
    pending.settle(outcome);
  }

  /**
   * Fails a request the producer refused. Exactly-once, as Kafka's log does: the transaction fails
   * under the write, which rejects with a PartitionResetError while the partitions whose work it held are reset.
   */
  private refuse(pending: PendingIo, refused: Error): void {
    const instance = this.instance;
    if (this.mode !== 'exactlyOnce' || !isRefusedWrite(refused) || instance?.id !== pending.owner) return pending.settle({ ok: false, error: refused });
    void instance.consumer.resetAfterAbort();
    pending.settle({
      ok: false,
      error: new PartitionResetError(`the transaction failed under this write, so its partitions are reset: ${refused.message}`, { cause: refused }),
    });
  }

  private crashPhaseOf(request: IoRequest): 'before' | 'after' | undefined {
    if (!this.armed) return undefined;
    const phase = crashPhase(this.armed.point, request);
    if (phase === undefined || --this.armed.remaining > 0) return undefined;
    this.armed = undefined;
    return phase;
  }

  /** Ends the running instance where it stands: nothing of it runs or lands after this. `crashed`: counted as a crash. */
  private crashNow(crashed = true): void {
    const instance = this.instance;
    if (!instance?.alive) return;
    instance.alive = false;
    this.io.fence(instance.id);
    this.clock.fence(instance.id);
    if (crashed) this.observations.crashed();
  }

  private async restartNow(): Promise<void> {
    if (this.instance?.alive) throw new Error('TopologyTestDriver.restart: the engine is running; crash() it first');
    if (this.options.stateDir) {
      // Reopen LevelDB, as a restarted process would.
      await this.state?.close();
      this.state = await this.openState();
    }
    this.startInstance();
  }

  /** The effect id a declared `effectId` gives the source record at this offset (none without one, or if it fails). */
  private declaredEffectIdAt(partition: number, offset: number): string | undefined {
    const source = this.topology.source;
    if (!source.effectId) return undefined;
    const [record] = this.log.read({ topic: source.topic, partition }, offset, 1);
    const decoded = record && decodeRecord(source, record);
    return decoded?.ok ? decoded.event.effectId : undefined;
  }

  private requireLive(what: string): Instance {
    if (this.instance === undefined) {
      throw new Error(`TopologyTestDriver.${what}: the engine has not started yet; it starts with the first run (runUntilIdle() or advanceWallClockTime())`);
    }
    if (!this.instance.alive) throw new Error(`TopologyTestDriver.${what}: the engine is crashed; restart() it first`);
    return this.instance;
  }
}

/** A restore's length, checked: a RangeError naming the option (and the partition, from a function). */
function validRestoreMs(ms: number, partition?: number): number {
  if (typeof ms === 'number' && Number.isFinite(ms) && ms >= 0) return ms;
  const from = partition === undefined ? '' : ` for partition ${partition}`;
  throw new RangeError(`TopologyTestDriver: restoreMs must be 0 or more ms${from}, got ${shown(ms)}`);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
/**
 * What an output topic decodes without a serde: JSON where it parses, else the text, else (not
 * UTF-8) the bytes as they are. Reads only.
 */
const jsonWhereJson: Serde<unknown> = {
  name: 'json where JSON',
  serialize: () => {
    throw new Error('TopologyTestDriver: an output topic is read, never written');
  },
  deserialize: (bytes) => {
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      return bytes;
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  },
};

/** Refuses crash options that would never fire (a misspelt point, an nth below 1) instead of arming them silently. */
function checkCrashOptions(options: CrashOptions): void {
  const problem = optionsProblem(options, ['at', 'point', 'nth']);
  if (problem !== undefined) throw new TypeError(`TopologyTestDriver.crash: ${problem}`);
  const { point, nth, at } = options;
  if (point !== undefined && !crashPoints.includes(point)) {
    const near = typeof point === 'string' ? nearest(point, crashPoints) : undefined;
    throw new RangeError(
      `TopologyTestDriver.crash: no crash point ${shown(point)}${near ? ` (did you mean '${near}'?)` : ''}; the points are ${crashPoints.join(', ')}`,
    );
  }
  if (nth !== undefined && !(Number.isInteger(nth) && nth >= 1))
    throw new RangeError(`TopologyTestDriver.crash: nth must be a whole number of at least 1, got ${shown(nth)}`);
  if (nth !== undefined && point === undefined) throw new TypeError('TopologyTestDriver.crash: nth counts the times a point is reached; give it with point');
  if (at !== undefined && !(Number.isFinite(at) && at >= 0))
    throw new RangeError(`TopologyTestDriver.crash: at must be a virtual time of 0 or more ms, got ${shown(at)}`);
  if (at !== undefined && point !== undefined) throw new TypeError('TopologyTestDriver.crash: give at or point, not both');
}

/** Why a driver cannot reach `point` (see TopologyTestDriver.canCrashAt). */
function unreachableWhy(point: CrashPoint): string {
  if (point === 'restoring') return 'only with the restoreMs option';
  if (point === 'landed-not-durable') return "only in mode 'staged' or 'exactlyOnce'";
  return "only in mode 'exactlyOnce'";
}

/**
 * Refuses a state directory that holds state already: a new driver's log starts at offset 0, so
 * the effect records stored there would take its events for ones already applied.
 */
function refuseUsedStateDir(dir: string): void {
  let entries: string[];
  try {
    // Loaded here, not imported: the lab bundles the driver for the browser, where no stateDir is given.
    entries = process.getBuiltinModule('node:fs').readdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return; // created at the start
    if (code === 'ENOTDIR')
      throw new Error(`TopologyTestDriver: stateDir '${dir}' is a file (or lies under one), not a directory; pass a directory, new or empty`, {
        cause: error,
      });
    throw error;
  }
  if (entries.length === 0) return;
  throw new Error(
    `TopologyTestDriver: stateDir '${dir}' is not empty: it holds the state of an earlier driver or run, ` +
      "and this driver's in-memory log starts at offset 0 again, so the effect records stored there would mark every event a DUPLICATE " +
      '(its model never called, its effects never applied); pass an empty or new directory (mkdtemp, say), or omit stateDir for a temporary in-memory state ' +
      "(a driver's own crash() and restart() keep its directory; reuseStateDir: true reads state left there on purpose)",
  );
}
