import { setMaxListeners } from 'node:events';
import type { Topology } from '../graph/topology.js';
import type { Clock, Timer } from '../ports/clock.js';
import {
  isCommitRefused,
  isPartitionReset,
  partitionId,
  type AssignedPartition,
  type CommitOffset,
  type Log,
  type LogRecord,
  type TopicPartition,
} from '../ports/log.js';
import type { Random } from '../ports/random.js';
import { isAbandonment, type Store, type StoreOp } from '../ports/store.js';
import { AttemptsIndexedStore } from './attemptsIndex.js';
import { AttemptsRecords } from './attemptsRecords.js';
import type { EngineContext } from './engineContext.js';
import { StatusUpdates } from './statusUpdates.js';
import { callLimitOf, tokenPacingsOf } from './tokenPacing.js';
import type { BudgetStatus, EngineStatus } from './engineStatus.js';
import { MetricsRecorder, type EngineMetrics } from './metrics.js';
import type { EngineObserver } from './outcomes.js';
import { checkResolution } from './checkResolution.js';
import type { ParkedEvent, ParkedKeyState, Resolution } from './parkedKeys.js';
import { RING_SIZE } from './effectRing.js';
import { PartitionTasks } from './partitionTasks.js';
import { disposeProcessors } from './processors/index.js';
import { PartitionTask } from './partitionTask.js';
import { eventEndFor } from './eventEnd.js';
import type { TrackerCommit } from './commitTracker.js';
import { COMMIT_METADATA_MAX_BYTES } from './offsetMetadata.js';
import { RateGate } from './rateGate.js';
import { RunJournals } from './runJournals.js';
import { StateWriter } from './stateWriter.js';
import { shown } from '../graph/shown.js';

/**
 * When the finished prefix is committed: `'each'` after every finished event, or on the
 * boundaries of an interval of `everyMs`. The boundaries are whole multiples of `everyMs` on the
 * clock (since the Unix epoch on the system clock), not counted from the engine's start, so
 * commits do not drift with the load: with `everyMs` 3,600,000 a commit falls at every full hour.
 */
export type CommitPolicy = { readonly everyMs: number } | 'each';

/** What an engine runs on. Everything outside the engine comes in through these ports. */
export interface EngineOptions {
  readonly topology: Topology;
  readonly log: Log;
  readonly clock: Clock;
  readonly store: Store;
  readonly random: Random;
  readonly observer?: EngineObserver;
  /** @defaultValue `{ everyMs: 5000 }` */
  readonly commit?: CommitPolicy;
  /** Unfinished events per partition before it is paused. @defaultValue 1000 */
  readonly maxBufferedPerPartition?: number;
  /**
   * The longest metadata a commit may carry: the engine lists there the finished offsets above
   * the committed one, so that after a crash or a rebalance they are skipped, not run again. Past
   * it the list is cut at the highest offset that fits, and the offsets left out are redelivered
   * (their effects found recorded). It must be below the broker's `offset.metadata.max.bytes` (the
   * Kafka client adds a NUL byte); 0 commits offsets alone. See docs/delivery.md. @defaultValue 4095
   */
  readonly commitMetadataMaxBytes?: number;
  /**
   * Whether effect records of ids derived from offsets go to their partitions' effect rings
   * (docs/guarantees.md, "How long effect records are kept"); false: under their effect ids only,
   * each pruned after the commit, as orderly before rings did. Records of both kinds are looked up
   * either way. Set it to false while workers of an orderly without rings may take this group's
   * partitions (a rolling upgrade: docs/state.md). @defaultValue true
   */
  readonly effectRing?: boolean;
  /**
   * Positions in each partition's ring of effect records (ids derived from offsets): it keeps the
   * records of its partition's last events, and a commit is asked for when an event finds its
   * position taken by a record that the commit would pass. For tests that make the ring wrap within a few events: it
   * must stay the same for as long as the partitions' state lives, since a record is looked up at
   * `offset % effectRingSize`. @defaultValue 16384
   * @internal
   */
  readonly effectRingSize?: number;
  /** Names this engine instance to its agent steps (DecideContext.instance), so a test can tell restarts apart. */
  readonly instance?: string;
}

/** How {@link Engine.stop} treats the work in flight. */
export interface StopOptions {
  /**
   * How long the work in flight may run on before it is aborted (0: abort at once). Aborted
   * events are unfinished: not committed, so the next owner of their partition (or this worker,
   * restarted) runs them again, and their effects, recorded or not, still happen once.
   * @defaultValue 0
   */
  readonly graceMs?: number;
}

/** A parked key as the engine reports it. */
export interface ParkedKeyInfo extends ParkedKeyState {
  readonly topic: string;
  readonly partition: number;
}

/**
 * Runs a topology over a log. Events of different keys run in parallel, events of one key in log
 * order; only each partition's contiguous finished prefix is committed; effects are applied once;
 * poison events are parked with their key held. It depends on ports only, so the test driver and
 * Kafka run this same code.
 */
export class Engine {
  private readonly ctx: EngineContext;
  private readonly tasks = new PartitionTasks();
  private readonly commitPolicy: CommitPolicy;
  private readonly commitMetadataMaxBytes: number;
  private commitTimer: Timer | undefined;
  private committing: Promise<void> | undefined;
  private commitAgain = false;
  private failed: Error | undefined;
  private stopping = false;
  /** Aborted by a stop or a failure: restores still under way end then, instead of holding the stop for their whole length. */
  private readonly restores = new AbortController();
  /** The store's restores under way: a stop lets them end (what an abandoned one keeps lands) before the log closes. */
  private readonly restoring = new Set<Promise<void>>();

  constructor(private readonly options: EngineOptions) {
    const { topology, clock, observer = {} } = options;
    // Each partition's restore listens to it: a worker may restore more than 10 at once.
    setMaxListeners(0, this.restores.signal);
    this.commitPolicy = checkCommitPolicy(options.commit ?? { everyMs: 5_000 });
    this.commitMetadataMaxBytes = checkMetadataMaxBytes(options.commitMetadataMaxBytes ?? COMMIT_METADATA_MAX_BYTES);
    const metrics = new MetricsRecorder();
    const store = new AttemptsIndexedStore(options.store);
    const writer = new StateWriter(store);
    const ctx = {
      topology,
      clock,
      random: options.random,
      store,
      attempts: new AttemptsRecords(store),
      runs: new RunJournals(store, topology.agentSteps),
      log: options.log,
      writer,
      gates: new Map(topology.agentSteps.map((step) => [step.name, new RateGate(clock, callLimitOf(step.limit))])),
      tokens: tokenPacingsOf(topology.agentSteps, clock),
      end: eventEndFor(options.log, writer),
      observer,
      metrics,
      ...(options.instance !== undefined ? { instance: options.instance } : {}),
      commitNow: () => this.commit(),
      report: (outcome, event, details) => {
        metrics.outcome(outcome);
        if (!observer.outcome) return;
        const { topic, partition, offset, key, effectId } = event;
        const atMs = clock.now();
        // Most outcomes have no details: a literal of fixed shape is cheaper to build than a spread.
        observer.outcome(
          details ? { outcome, atMs, topic, partition, offset, key, effectId, ...details } : { outcome, atMs, topic, partition, offset, key, effectId },
        );
      },
    } satisfies Omit<EngineContext, 'jobs'>;
    this.ctx = { ...ctx, jobs: new StatusUpdates(ctx) };
  }

  /** Subscribes to the topology's source topic; partitions arrive through the log's assignments. */
  async start(): Promise<void> {
    await this.options.log.subscribe([this.ctx.topology.source.topic], {
      assigned: (tps) => this.assign(tps),
      revoked: (tps) => this.revoke(tps),
      lost: (tps) => this.lose(tps),
      records: (batch) => this.receive(batch),
      failed: (error) => this.fail(error),
    });
  }

  /** Resolves a parked key: with a person's decision, a retry of the step, or by discarding its parked event. */
  async resolve(partition: number, key: string, resolution: Resolution): Promise<void> {
    const checked = checkResolution(`resolve key '${key}' of partition ${partition}`, resolution);
    await this.task(partition, 'resolve').resolve(key, checked);
  }

  private task(partition: number, what: string): PartitionTask {
    const tp = { topic: this.ctx.topology.source.topic, partition };
    const task = this.tasks.get(tp);
    if (!task) throw new Error(`${what}: partition ${partitionId(tp)} is not assigned to this engine; ask the worker that runs it`);
    return task;
  }

  /** The event a resolution of this parked key decides. */
  parkedHead(partition: number, lane: string): ParkedEvent {
    return this.task(partition, 'parkedHead').parkedHead(lane);
  }

  parked(): ParkedKeyInfo[] {
    return [...this.tasks.values()].flatMap((t) => t.parkedKeys().map((s) => ({ ...s, ...t.tp })));
  }

  metrics(): EngineMetrics {
    return this.ctx.metrics.snapshot();
  }

  /** What the engine holds now: events in flight, each step's budget, and per partition its offsets and parked keys. */
  status(): EngineStatus {
    const budgets = this.ctx.topology.agentSteps.flatMap((step): BudgetStatus[] => {
      if (step.limit?.calls !== undefined) return [{ step: step.name, source: 'declared', calls: step.limit.calls, windowMs: step.limit.windowMs }];
      const gate = this.ctx.gates.get(step.name);
      const learned = gate?.learnedBudget;
      return learned === undefined ? [] : [{ step: step.name, source: 'learned', calls: learned, windowMs: gate?.learnedLimit?.windowMs }];
    });
    const partitions = [...this.tasks.values()].map((task) => {
      const parked = task.parkedKeys();
      let heldEvents = 0;
      // The parked event is the key's head; the events behind it are held.
      for (const key of parked) heldEvents += key.nextSeq - key.headSeq - 1;
      return {
        ...task.tp,
        committedOffset: task.tracker.committedOffset,
        highWatermark: this.options.log.highWatermark(task.tp),
        parkedKeys: parked.length,
        heldEvents,
      };
    });
    return { inFlight: this.inFlight, budgets, partitions };
  }

  /** Units running across all partitions: events not yet landed (those landed and becoming durable are not counted). */
  get inFlight(): number {
    let n = 0;
    for (const task of this.tasks.values()) n += task.running;
    return n;
  }

  /**
   * Stops: starts no new work, lets the work in flight run for `graceMs` (default 0) and aborts
   * what is left (model calls, Retry-After waits and retry delays end at once; an event whose
   * effect is being recorded runs to its end), commits the finished prefix and closes the log.
   * A stop never waits on a model, so a long Retry-After cannot hold a shutdown or a rebalance.
   */
  async stop(options: StopOptions = {}): Promise<void> {
    const graceMs = options.graceMs ?? 0;
    if (!Number.isFinite(graceMs) || graceMs < 0) throw new RangeError(`Engine.stop: graceMs must be 0 or more, got ${graceMs}`);
    this.stopping = true;
    this.restores.abort(new Error('the engine stops'));
    this.commitTimer?.cancel();
    this.commitTimer = undefined;
    const tasks = [...this.tasks.values()];
    // No new event is taken: the log need not fetch more (a stop is final, nothing resumes them).
    if (tasks.length > 0) this.options.log.pause(tasks.map((t) => t.tp));
    const reason = 'the engine stops';
    const grace = graceMs > 0 ? this.ctx.clock.setTimer(graceMs, () => tasks.forEach((t) => void t.close('abort', reason))) : undefined;
    await Promise.all(tasks.map((t) => t.close(graceMs > 0 ? 'drain' : 'abort', reason)));
    grace?.cancel();
    await this.commit();
    await this.closePartitions([...this.tasks.values()].map((t) => t.tp));
    // Aborted above, they end at once; after a failure, an assignment's step may have stopped waiting for them.
    await Promise.allSettled(this.restoring);
    disposeProcessors(this.ctx);
    await this.options.log.close();
  }

  /**
   * Takes the partitions over side by side: each one's state is restored (by the store, then its
   * task) independently of the others', so one large partition does not hold the small ones.
   */
  private async assign(assigned: readonly AssignedPartition[]): Promise<void> {
    const max = this.options.maxBufferedPerPartition ?? 1_000;
    await Promise.all(assigned.map((partition) => this.assignOne(partition, max)));
  }

  private async assignOne({ topic, partition, committed }: AssignedPartition, maxBuffered: number): Promise<void> {
    const tp = { topic, partition };
    if (this.stopping || this.failed) return;
    // The partition's state first (a changelog store restores it here), then its task reads it.
    const restores = this.restores.signal;
    const restore = this.options.store.openPartition?.(tp, committed?.offset, restores);
    if (restore) {
      this.restoring.add(restore);
      const ended = (): boolean => this.restoring.delete(restore);
      restore.then(ended, ended);
    }
    try {
      await restore;
    } catch (error) {
      // Abandoned by the stop (or failure) that aborted it: the partition is not run, and its
      // partial state is not handed back as complete. Any other failure is the restore's own.
      if (isAbandonment(error, restores)) return;
      throw error;
    }
    // A stop (or a failure) came while the state was restored: the partition is not run (its task
    // would start after the stop took its tasks, replaying parked keys as the store closes), and its
    // restored state is handed back as a stopped partition's.
    if (this.stopping || this.failed) return this.closePartitions([tp]);
    const task = new PartitionTask(tp, this.ctx, {
      maxBuffered,
      commitMetadataMaxBytes: this.commitMetadataMaxBytes,
      committedAtAssignment: committed?.offset,
      onFinished: () => this.finished(),
      onReplayed: () => this.finished(),
      effectRingSize: this.options.effectRingSize ?? RING_SIZE,
      recordInRing: this.options.effectRing !== false,
      onRingTaken: () => {
        if (!this.failed && !this.stopping) void this.commit();
      },
      onFatal: (error) => this.fail(error),
    });
    // The finished offsets the last commit listed above its offset: skipped when they come again.
    const resumed = task.tracker.resume(committed);
    this.ctx.observer.resumed?.({ ...tp, offset: committed?.offset, ...resumed, atMs: this.ctx.clock.now() });
    this.tasks.set(tp, task);
    await task.restore();
  }

  /** Aborts the partitions' work in flight (a rebalance must not wait on a model), commits their finished prefix, drops them. */
  private async revoke(tps: readonly TopicPartition[]): Promise<void> {
    const tasks = tps.flatMap((tp) => this.tasks.get(tp) ?? []);
    await Promise.all(tasks.map((t) => t.close('abort', 'revoked')));
    await this.commit();
    await this.closePartitions(tasks.map((t) => t.tp));
    for (const tp of tps) this.tasks.delete(tp);
  }

  /**
   * Tells the store that these partitions were handed back, their work finished and committed.
   * Not after a failure: the last commit may not have landed (on an exactly-once log, the local
   * state then holds writes of an aborted transaction), so the store must not vouch for its state.
   */
  private async closePartitions(tps: readonly TopicPartition[]): Promise<void> {
    const store = this.options.store;
    if (this.failed || !store.closePartition) return;
    // A partition whose last commit was refused is not vouched for either.
    const committed = tps.filter((tp) => this.tasks.get(tp)?.tracker.toCommit() === undefined);
    await Promise.all(committed.map((tp) => store.closePartition!(tp)));
  }

  /** Drops the partitions without committing (another consumer may own them now), after aborting their work in flight. */
  private async lose(tps: readonly TopicPartition[]): Promise<void> {
    const tasks = tps.flatMap((tp) => this.tasks.get(tp) ?? []);
    for (const tp of tps) this.tasks.delete(tp);
    await Promise.all(tasks.map((t) => t.close('abort', 'lost')));
  }

  private receive(batch: readonly LogRecord[]): void {
    // Stopping or failed, the engine takes no new event: a record the log had already fetched is
    // left unfinished and uncommitted, so the partition's next owner reads it.
    if (this.failed || this.stopping) return;
    this.ctx.metrics.receive(batch.length);
    const observer = this.ctx.observer;
    for (const record of batch) {
      observer.received?.(record);
      const task = this.tasks.get(record);
      if (!task) throw new Error(`the log delivered ${partitionId(record)}@${record.offset}, which is not assigned to this engine`);
      task.receive(record);
    }
  }

  private finished(): void {
    if (this.commitPolicy === 'each') void this.commit();
    else this.scheduleCommit();
  }

  /** Sets the commit timer, unless it is set or the engine failed. */
  private scheduleCommit(): void {
    if (this.commitTimer || this.failed || this.stopping) return;
    if (this.commitPolicy === 'each') {
      // Only after a refused commit: try again soon, even if no event finishes meanwhile.
      this.commitTimer = this.ctx.clock.setTimer(REFUSED_COMMIT_RETRY_MS, () => {
        this.commitTimer = undefined;
        void this.commit();
      });
    } else {
      // Commit on the interval's boundaries, so the times of commits do not drift with the load.
      const everyMs = this.commitPolicy.everyMs;
      const delayMs = everyMs - (this.ctx.clock.now() % everyMs);
      this.commitTimer = this.ctx.clock.setTimer(delayMs, () => {
        this.commitTimer = undefined;
        void this.commit();
      });
    }
  }

  /** Commits every partition's finished prefix; one commit at a time, the next one coalesced. */
  private commit(): Promise<void> {
    if (this.committing) {
      this.commitAgain = true;
      return this.committing;
    }
    this.committing = this.commitLoop().finally(() => (this.committing = undefined));
    return this.committing;
  }

  private async commitLoop(): Promise<void> {
    do {
      this.commitAgain = false;
      const offsets: Array<{ task: PartitionTask; commit: TrackerCommit }> = [];
      for (const task of this.tasks.values()) {
        const commit = task.tracker.toCommit();
        if (commit) offsets.push({ task, commit });
      }
      // A transactional log commits its open transaction even when no offset moves: a revoked
      // partition's last records must be committed before its state is vouched for.
      if (offsets.length === 0 && !this.options.log.atomic) {
        // Nothing to commit, but a replay may have ended a held event below the committed offset.
        await this.prune();
        continue;
      }
      try {
        await this.options.log.commit(offsets.map(({ task, commit }) => commitOffset(task.tp, commit)));
      } catch (error) {
        if (!isCommitRefused(error)) {
          this.fail(error as Error);
          return;
        }
        // A rebalance took the commit: a later commit carries these offsets again if the
        // partitions stay here, else their next owner starts from the last committed offset.
        this.ctx.observer.commitRefused?.({
          partitions: offsets.map((o) => partitionId(o.task.tp)),
          error: (error as Error).message,
          atMs: this.ctx.clock.now(),
        });
        this.scheduleCommit();
        return;
      }
      for (const { task, commit } of offsets) {
        task.tracker.committedUpTo(commit);
        this.options.store.committed?.(task.tp, commit.offset);
        this.ctx.metrics.commit();
        this.ctx.observer.committed?.({ ...task.tp, offset: commit.offset, finishedAbove: commit.finishedAbove, atMs: this.ctx.clock.now() });
      }
      await this.prune();
    } while (this.commitAgain);
  }

  /**
   * Prunes the effect records the committed offsets passed, in one batch after a commit: on
   * Kafka each delete is a tombstone on the changelog (in the next transaction, exactly-once).
   * A crash before it leaves them to the partition's next assignment, which finds them.
   */
  private async prune(): Promise<void> {
    if (this.failed || this.stopping) return;
    const ops: StoreOp[] = [];
    const byTask: Array<[PartitionTask, StoreOp[]]> = [];
    for (const task of [...this.tasks.values()]) {
      const prunable = await task.prunable();
      if (prunable.length > 0) byTask.push([task, prunable]);
      for (const op of prunable) ops.push(op);
    }
    if (ops.length === 0) return;
    const failed = (error: unknown) => {
      // Taken back by the log (exactly-once: its transaction aborted): the reset finds them again.
      if (!isPartitionReset(error)) this.fail(error as Error);
    };
    const pruned = () => this.ctx.observer.pruned?.({ records: ops.length, atMs: this.ctx.clock.now() });
    if (this.ctx.end.kind === 'transactional') {
      // In the transaction, as every changelog write, one unit per partition, which only prunes (an
      // abort loses its tombstones, harmlessly, and resets no partition for it): the writer still
      // gathers them into one batch.
      const units = byTask.map(([task, prunable]) => this.ctx.end.atomically(task.tp, () => this.ctx.writer.write(prunable), { prunesOnly: true }));
      await Promise.all(units).then(pruned, failed);
      return;
    }
    // Landed (in order, its tombstones handed to the producer) is enough to go on: the next commit
    // need not wait for their acknowledgement, and a failure of it stops the engine as any would.
    const staged = this.ctx.writer.stage(ops);
    staged.durable.then(pruned, failed);
    await staged.landed.catch(() => undefined);
  }

  private fail(error: Error): void {
    if (this.failed) return;
    this.failed = error;
    this.restores.abort(new Error(`the engine failed: ${error.message}`));
    this.commitTimer?.cancel();
    for (const task of this.tasks.values()) void task.close('abort', `the engine failed: ${error.message}`);
    this.ctx.observer.fatal?.(error);
  }
}

/** How soon a commit refused by a rebalance is tried again under commit: 'each'. */
const REFUSED_COMMIT_RETRY_MS = 1_000;

/** A partition's commit: its offset, and its metadata only when it lists something (an absent one clears what the last commit kept). */
function commitOffset(tp: TopicPartition, commit: TrackerCommit): CommitOffset {
  const { topic, partition } = tp;
  return commit.metadata ? { topic, partition, offset: commit.offset, metadata: commit.metadata } : { topic, partition, offset: commit.offset };
}

function checkMetadataMaxBytes(bytes: number): number {
  if (!Number.isInteger(bytes) || bytes < 0) {
    throw new RangeError(
      `Engine: commitMetadataMaxBytes must be a whole number of 0 or more (the broker's offset.metadata.max.bytes or less), got ${shown(bytes)}`,
    );
  }
  return bytes;
}

function checkCommitPolicy(policy: CommitPolicy): CommitPolicy {
  if (policy === 'each') return policy;
  if (!Number.isInteger(policy?.everyMs) || policy.everyMs < 1) {
    throw new RangeError(`Engine: commit.everyMs must be a whole number of at least 1, got ${shown(policy?.everyMs)}; or commit: 'each'`);
  }
  return policy;
}
