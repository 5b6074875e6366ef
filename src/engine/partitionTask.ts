import { setMaxListeners } from 'node:events';
import type { LogRecord, TopicPartition } from '../ports/log.js';
import type { StoreOp } from '../ports/store.js';
import { isPartitionReset, partitionId } from '../ports/log.js';
import { attemptsOwners } from './attemptsRecords.js';
import { CommitTracker } from './commitTracker.js';
import { EffectHorizon } from './effectHorizon.js';
import { DEFAULT_ID_RETENTION_MS, EffectPruning } from './effectPruning.js';
import { EffectRing } from './effectRing.js';
import type { EngineContext } from './engineContext.js';
import { laneOf } from './events.js';
import type { Landed } from './eventEnd.js';
import { EventUnits } from './eventUnits.js';
import { MinHeap } from './minHeap.js';
import { ParkedKeys, type ParkedEvent, type ParkedKeyState, type Resolution } from './parkedKeys.js';
import { processorsSeeParked } from './processors/index.js';

/** A partition's lifecycle; any other transition is a bug and throws. */
export type TaskState = 'restoring' | 'running' | 'closing' | 'closed';
const transitions: Record<TaskState, readonly TaskState[]> = {
  restoring: ['running', 'closing'],
  running: ['closing'],
  closing: ['closed'],
  closed: [],
};

/** The events of one key waiting in a partition, oldest first, and whether its parked events replay. */
interface Lane {
  id: string;
  readonly queue: Array<LogRecord | undefined>;
  head: number;
  busy: boolean;
  scheduled: boolean;
  replaying: boolean;
}

// A replay step goes before any event from the log: it was resolved on purpose, and is short.
const REPLAY_PRIORITY = -1;
// At most this many drained lanes are kept for reuse (about the in-flight window's worth).
const SPARE_LANES = 256;

export interface PartitionTaskOptions {
  /** Events received and unfinished before the partition is paused. */
  readonly maxBuffered: number;
  /** The longest metadata (the finished offsets above the committed one) a commit may carry; 0: none. */
  readonly commitMetadataMaxBytes: number;
  /** The group's committed offset when the partition was assigned (undefined: none): effect records below it are pruned at once. */
  readonly committedAtAssignment: number | undefined;
  readonly onFinished: (tp: TopicPartition) => void;
  /** A replay step of a parked key ended: no offset moves, but its effect record may now be pruned. */
  readonly onReplayed: () => void;
  /** Positions in the partition's ring of effect records (see EngineOptions.effectRingSize). */
  readonly effectRingSize: number;
  /** Whether effect records are written to the ring (EngineOptions.effectRing); it is read either way. */
  readonly recordInRing: boolean;
  /** An event found its position in the partition's effect ring taken by a record that a commit now would pass. */
  readonly onRingTaken: () => void;
  readonly onFatal: (error: Error) => void;
}

/**
 * One assigned partition: its key lanes, its in-flight window (at most maxInFlight units, never
 * two of one key, each key's events in log order), its commit tracker and its parked keys.
 *
 * An event's unit ends once its end has landed (its state written locally, its changelog records
 * handed to the producer in order): its slot and its key's lane go on, as a Kafka Streams task
 * goes on while its changelog producer flushes. The event finishes (and may be committed) only
 * once its end is durable. With a store that does not stage its writes, landed is durable.
 */
export class PartitionTask {
  readonly tracker: CommitTracker;
  private state: TaskState = 'restoring';
  private readonly lanes = new Map<string, Lane>();
  // Lanes of drained keys, to reuse: with many keys, nearly every event starts a lane and ends it.
  private readonly spareLanes: Lane[] = [];
  private readonly ready = new MinHeap<Lane>();
  private readonly parked: ParkedKeys | undefined;
  private readonly horizon: EffectHorizon | undefined;
  private readonly pruning: EffectPruning | undefined;
  private readonly ring: EffectRing | undefined;
  /** The end of the finished prefix when a commit was last asked for to free ring positions. */
  private ringCommitAskedAt: number | undefined;
  private readonly units: EventUnits;
  private inFlight = 0;
  /** Events whose lane went on once their end landed, and which wait for it to be durable to finish. */
  private becomingDurable = 0;
  /**
   * Set when the log took a write of this partition back (a partition reset: exactly-once's
   * aborted transaction): the log resets the partition, so no unit starts here any more. A lane
   * whose event was taken back must not go on to the key's next event meanwhile: that event would
   * run (and call the model) before the earlier one's state landed.
   */
  private takenBack = false;
  private paused = false;
  private drained: (() => void) | undefined;
  private closed: Promise<void> | undefined;
  // Aborted when the partition's work in flight is given up: its model calls and waits end at once.
  private readonly abort = new AbortController();

  constructor(
    readonly tp: TopicPartition,
    private readonly ctx: EngineContext,
    private readonly options: PartitionTaskOptions,
  ) {
    this.tracker = new CommitTracker(partitionId(tp), options.commitMetadataMaxBytes);
    // Every model call, Retry-After wait and retry delay in flight listens to this one signal:
    // many listeners are the design, not a leak, so Node must not warn past its default of 10.
    setMaxListeners(0, this.abort.signal);
    const park = ctx.topology.park;
    this.parked = park && new ParkedKeys(ctx.store, park.name, tp);
    // Declared effect ids may repeat at any offset: only offset-derived ones have a horizon.
    const apply = ctx.topology.applyOnce;
    this.horizon = apply && !ctx.topology.source.effectId ? new EffectHorizon(ctx.store, ctx.writer, ctx.end, apply.name, tp, options.onFatal) : undefined;
    this.pruning =
      apply &&
      new EffectPruning({
        store: ctx.store,
        effectStore: apply.name,
        parkStore: park?.name,
        tp,
        idRetentionMs: ctx.topology.source.effectId ? (apply.idRetentionMs ?? DEFAULT_ID_RETENTION_MS) : undefined,
      });
    // Declared ids may repeat at any offset, so their records are kept by id, never in a ring.
    const horizon = this.horizon;
    this.ring = horizon
      ? new EffectRing(
          ctx.store,
          apply!.name,
          tp,
          options.effectRingSize,
          horizon,
          () => this.committed(),
          options.recordInRing,
          (holder) => this.ringTaken(holder),
        )
      : undefined;
    this.units = new EventUnits(ctx, tp, this.parked, this.horizon, this.pruning, this.ring);
  }

  /** The partition's committed offset (exclusive), as this task knows it; undefined if it was never committed. */
  private committed(): number | undefined {
    return this.tracker.committedOffset ?? this.options.committedAtAssignment;
  }

  /** Loads the partition's attempts records, run journals and parked keys, and resumes the replays a crash interrupted. */
  async restore(): Promise<void> {
    for (const owner of attemptsOwners(this.ctx.topology)) await this.ctx.attempts.load(owner, this.tp);
    await this.ctx.runs.load(this.tp);
    await this.horizon?.load();
    if (this.parked) {
      const entries = await this.ctx.store.entries<ParkedKeyState>(this.parked.prefix);
      for (const interrupted of this.parked.load(entries)) this.startReplay(interrupted.lane);
    }
    // Effect records a crash, another worker or an older version left below the committed offset.
    const leftovers = (await this.pruning?.load(this.options.committedAtAssignment)) ?? [];
    if (leftovers.length > 0 && this.state === 'restoring') {
      // A prune (see AtomicOptions.prunesOnly): taken back with an aborted transaction, its deletes
      // are found again at the next restore, so the partition runs on.
      await this.ctx.end
        .atomically(this.tp, () => this.ctx.writer.write(leftovers), { prunesOnly: true })
        .catch((error: unknown) => {
          if (!isPartitionReset(error)) throw error;
        });
    }
    // Closed while it restored (the engine stopped, or the partition was revoked or lost): it never runs.
    if (this.state !== 'restoring') return;
    // Only a partition that runs tells the circuits: one stopped or revoked while it restored must arm no timer.
    if (this.parked) processorsSeeParked(this.ctx, this.parked);
    this.moveTo('running');
    this.pump();
  }

  receive(record: LogRecord): void {
    // The log delivers no record of a partition being revoked, and the engine drops those that
    // come while it stops: a record here is a breach of the Log port's contract.
    if (this.state !== 'running') {
      throw new Error(
        `partition ${partitionId(this.tp)} received offset ${record.offset} while ${this.state}: the log delivered a record of a partition that is not running (being restored, closed or revoked)`,
      );
    }
    if (this.tracker.received(record.offset)) {
      // It finished before this partition was assigned here (its commit's metadata listed it):
      // nothing runs, no outputs go out again.
      this.finish(record.offset);
      return;
    }
    this.horizon?.received(record.offset);
    const lane = this.lane(laneOf(record));
    lane.queue.push(record);
    this.schedule(lane);
    if (!this.paused && this.tracker.inProgress >= this.options.maxBuffered) {
      this.paused = true;
      this.ctx.log.pause([this.tp]);
    }
    this.pump();
  }

  /**
   * Asks for a commit when an event finds its ring position taken by a record (at `holder`) that a
   * commit now would pass, once per end of the finished prefix: without it, under a long commit
   * interval, the events after it would find theirs taken too and be recorded by effect id (a
   * delete each, later). A commit that would not pass the record (a partition held back by one
   * unfinished event, or records of an older life of the topic) is not asked for.
   */
  private ringTaken(holder: number): void {
    const finishedUpTo = this.tracker.finishedUpTo;
    if (finishedUpTo === undefined || finishedUpTo <= holder || this.ringCommitAskedAt === finishedUpTo) return;
    this.ringCommitAskedAt = finishedUpTo;
    this.options.onRingTaken();
  }

  /**
   * The deletes of the effect records no event of this partition can need any more, with its
   * offsets committed as they are now: built only while it runs (a closing partition's are left to
   * its next owner, which finds them at assignment).
   */
  async prunable(): Promise<StoreOp[]> {
    const committed = this.tracker.committedOffset ?? this.options.committedAtAssignment;
    if (!this.pruning || this.state !== 'running' || committed === undefined) return [];
    return this.pruning.prunable(committed, this.ctx.clock.now());
  }

  /** Resolves a parked key; its events then replay in order, ahead of its new ones. */
  async resolve(lane: string, resolution: Resolution): Promise<void> {
    await this.units.resolve(lane, resolution);
    this.startReplay(lane);
    this.pump();
  }

  /** The event at the head of a parked key. */
  parkedHead(lane: string): ParkedEvent {
    if (!this.parked) throw new Error(`partition ${partitionId(this.tp)}: this topology has no park()`);
    return this.parked.head(lane);
  }

  /** Parked keys of this partition. */
  parkedKeys(): ParkedKeyState[] {
    return this.parked?.all() ?? [];
  }

  /**
   * Starts no new work and settles once the work in flight has ended. `drain` lets it run to its
   * end; `abort` ends its model calls, Retry-After waits and retry delays at once, and the events
   * they served stay unfinished (not committed: the next owner runs them). An event whose effect
   * is already being recorded runs to its end either way. Called again with `abort`, it aborts
   * what a `drain` is waiting for.
   */
  close(mode: 'drain' | 'abort', reason?: string): Promise<void> {
    if (mode === 'abort' && !this.abort.signal.aborted) {
      this.abort.abort(new Error(`partition ${partitionId(this.tp)}: ${reason ?? 'work given up'}`));
    }
    this.closed ??= this.drain();
    return this.closed;
  }

  private async drain(): Promise<void> {
    this.moveTo('closing');
    // Ends still becoming durable are waited for too: they wait on Kafka, never on a model.
    if (this.inFlight > 0 || this.becomingDurable > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    this.moveTo('closed');
  }

  /** Units of work running now (events landed and becoming durable are not counted). */
  get running(): number {
    return this.inFlight;
  }

  private startReplay(laneId: string): void {
    const lane = this.lane(laneId);
    lane.replaying = true;
    this.schedule(lane);
  }

  private lane(id: string): Lane {
    let lane = this.lanes.get(id);
    if (!lane) {
      lane = this.spareLanes.pop();
      // A spare lane is drained: empty queue, head 0, neither busy, scheduled nor replaying.
      if (lane) lane.id = id;
      else lane = { id, queue: [], head: 0, busy: false, scheduled: false, replaying: false };
      this.lanes.set(id, lane);
    }
    return lane;
  }

  private schedule(lane: Lane): void {
    if (lane.busy || lane.scheduled) return;
    const next = lane.queue[lane.head];
    if (!next && !lane.replaying) return;
    lane.scheduled = true;
    this.ready.push(lane, lane.replaying ? REPLAY_PRIORITY : next!.offset);
  }

  private pump(): void {
    const max = this.ctx.topology.maxInFlight;
    while (this.state === 'running' && !this.takenBack && this.inFlight < max && this.ready.size > 0) {
      const lane = this.ready.pop()!;
      lane.scheduled = false;
      lane.busy = true;
      this.inFlight += 1;
      void this.runUnit(lane);
    }
  }

  /** Runs one unit of a lane; never rejects: an error that is not a give-up is fatal, and reported so. */
  private async runUnit(lane: Lane): Promise<void> {
    const record = lane.queue[lane.head];
    const signal = this.abort.signal;
    try {
      try {
        if (record) {
          lane.queue[lane.head++] = undefined;
          const landed = await this.units.runEvent(record, signal);
          // The commit tracker: the event finishes now, or once its landed end is durable.
          if (landed) this.finishWhenDurable(record.offset, landed);
          else this.finish(record.offset);
        } else {
          if ((await this.units.replayStep(lane.id, signal)) !== 'more') lane.replaying = false;
          // Its record (below the committed offset) is pruned at the next commit, which this asks for.
          this.options.onReplayed();
        }
      } catch (error) {
        // Given up on purpose, or taken back by the log: the event stays unfinished, so its offset
        // is never committed here.
        if (!signal.aborted && !isPartitionReset(error)) throw error;
        if (isPartitionReset(error)) this.takenBack = true;
      }
      this.unitDone(lane);
    } catch (error) {
      this.options.onFatal(error as Error);
      // Over all the same (the failure closed the partition first, so nothing new starts): a stop
      // after a fatal error waits for the units still running, never for this one.
      if (lane.busy) this.unitDone(lane);
    }
  }

  private finish(offset: number): void {
    this.tracker.finish(offset);
    this.options.onFinished(this.tp);
  }

  /** The event's unit is over; it finishes once its end is durable, or stays unfinished if that fails. */
  private finishWhenDurable(offset: number, landed: Landed): void {
    this.becomingDurable += 1;
    landed.durable.then(
      () => {
        this.becomingDurable -= 1;
        this.finish(offset);
        this.afterProgress();
      },
      (error: unknown) => {
        this.becomingDurable -= 1;
        // As for a unit: taken back by the log, it stays unfinished; anything else stops the engine.
        if (!isPartitionReset(error)) this.options.onFatal(error as Error);
        else this.takenBack = true;
        this.afterProgress();
      },
    );
  }

  private unitDone(lane: Lane): void {
    lane.busy = false;
    this.inFlight -= 1;
    if (lane.head === lane.queue.length) {
      lane.queue.length = 0;
      lane.head = 0;
      if (!lane.replaying) {
        this.lanes.delete(lane.id);
        if (this.spareLanes.length < SPARE_LANES) this.spareLanes.push(lane);
      }
    } else if (lane.head > 1024) {
      // A hot key never drains: drop the consumed slots now and then.
      lane.queue.splice(0, lane.head);
      lane.head = 0;
    }
    this.schedule(lane);
    this.afterProgress();
  }

  /**
   * After a unit ended or an event finished: resume a running partition, end a drain, start more
   * work. A closing partition stays paused though its last units free room: it takes no new event.
   */
  private afterProgress(): void {
    if (this.paused && this.state === 'running' && this.tracker.inProgress <= this.options.maxBuffered / 2) {
      this.paused = false;
      this.ctx.log.resume([this.tp]);
    }
    if (this.state === 'closing' && this.inFlight === 0 && this.becomingDurable === 0) this.drained?.();
    this.pump();
  }

  private moveTo(next: TaskState): void {
    if (!transitions[this.state].includes(next)) {
      throw new Error(`partition ${partitionId(this.tp)}: cannot go from ${this.state} to ${next}`);
    }
    this.state = next;
  }
}
