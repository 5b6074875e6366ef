import type { DecidedBy } from '../graph/nodes.js';
import type { LogRecord, TopicPartition } from '../ports/log.js';
import type { StoreOp } from '../ports/store.js';
import type { OutRecord } from '../ports/log.js';
import { validateDecision } from './agentStepRunner.js';
import { isThenable } from './attemptLoop.js';
import type { EffectHorizon } from './effectHorizon.js';
import type { EffectPruning } from './effectPruning.js';
import type { EffectRing } from './effectRing.js';
import type { EngineContext } from './engineContext.js';
import type { Landed } from './eventEnd.js';
import { fromStoredEvent, type EngineEvent } from './events.js';
import { loadOutput, type EffectRecord } from './outputs.js';
import { Outcome, type OutcomeDetails } from './outcomes.js';
import type { ParkedEvent, ParkedKeys, Resolution } from './parkedKeys.js';
import { buildProcessors } from './processors/index.js';
import type { EventInFlight, Processor } from './processors/processor.js';
import { deadLetterUndecodable, decode, decodeStored } from './stages/decode.js';
import { discardRecordOp, effectKey, recordedEffect } from './stages/effectLookup.js';
import { endEvent, endReplayed } from './stages/endOfEvent.js';
import { attemptsDeletes, exhausted, repark, requireParking } from './stages/exhausted.js';
import { hold } from './stages/hold.js';
import { runProcessors } from './stages/runProcessors.js';

/** What a replay step left: whether the key still has events to replay. */
export type ReplayProgress = 'more' | 'released' | 'parked-again';

const NO_DECISIONS: Readonly<Record<string, unknown>> = Object.freeze({});
const NO_MARKS: Readonly<Record<string, DecidedBy>> = Object.freeze({});

/**
 * The way of one event through a partition, stage by stage, each stage in a file of its own:
 * decode, the effect horizon (the window of offsets with no effect record), the effect lookup,
 * hold (its key is parked), the graph's processors in order, the end of the event. The partition
 * task runs it as one unit of a key lane and hands its end to the commit tracker. A resolved
 * key's replay goes the same way from its parked event.
 */
export class EventUnits {
  private readonly processors: readonly Processor[];
  /** The outcome of an event that went through every processor. */
  private readonly through: Outcome;

  constructor(
    private readonly ctx: EngineContext,
    private readonly tp: TopicPartition,
    private readonly parked: ParkedKeys | undefined,
    private readonly horizon: EffectHorizon | undefined,
    private readonly pruning: EffectPruning | undefined,
    private readonly ring: EffectRing | undefined,
  ) {
    this.processors = buildProcessors(ctx, ctx.topology.processors);
    this.through = ctx.topology.applyOnce ? Outcome.APPLIED : Outcome.FORWARDED;
  }

  /**
   * Runs one event from the log; rejects with the signal's reason if it is aborted before the
   * event's end is recorded. Settles once the event's end has landed: with `durable` when it is
   * not durable yet (a staged end), the lane may go on while the event must not count as
   * finished before `durable` settles.
   */
  async runEvent(record: LogRecord, signal: AbortSignal): Promise<Landed | undefined> {
    // Decode.
    const decoded = decode(this.ctx, record);
    if (!decoded.ok) {
      await deadLetterUndecodable(this.ctx, decoded.event, decoded.error);
      return undefined;
    }
    const { event, value } = decoded;
    // Effect horizon, then effect lookup: past the horizon no event has an effect record.
    const unrecorded = this.horizon?.beyond(event.offset) ?? false;
    const recorded = unrecorded ? undefined : this.lookup(event);
    // Hold: behind a parked key, unless it ended for good before the key was parked.
    if (this.parked?.get(event.lane) && !recorded) {
      await hold(this.ctx, this.parked, event);
      return undefined;
    }
    if (recorded) return endEvent(this.ctx, event, ...this.endOfRecorded(recorded), signal);
    // The graph's processors, in chain order.
    const unit: EventInFlight = { event, value, ops: [], outputs: [], decisions: NO_DECISIONS, decidedBy: NO_MARKS, signal };
    const processed = runProcessors(this.processors, unit);
    const stopped = isThenable(processed) ? await processed : processed;
    if (stopped?.kind === 'parked') {
      signal.throwIfAborted();
      await exhausted(this.ctx, this.parked, unit, stopped);
      return undefined;
    }
    // The end of the event, its effect recorded at its ring position if that is free, else under its effect id.
    const applied = !stopped && this.through === Outcome.APPLIED;
    const inRing = applied ? this.ring?.claim(event.offset) : undefined;
    const key = applied ? (inRing ?? effectKey(this.ctx, event)) : undefined;
    const landed = await endEvent(
      this.ctx,
      event,
      stopped ? Outcome.FILTERED : this.through,
      unit.ops,
      unit.outputs,
      signal,
      stopped ? undefined : decidedDetails(unit),
      key,
    );
    // A record under its effect id is pruned once the committed offset is past it (which waits for it to be durable).
    if (applied && inRing === undefined) this.pruning?.recorded(event.offset, key!);
    return landed;
  }

  /** Checks a resolution and makes it durable; the lane then replays the key. */
  async resolve(lane: string, resolution: Resolution): Promise<void> {
    const parked = requireParking(this.ctx, this.parked);
    if (!parked.get(lane)) throw new Error(`resolve: key '${lane}' of ${this.tp.topic}/${this.tp.partition} is not parked`);
    const head = parked.head(lane);
    const checked = 'decision' in resolution ? { decision: await this.checkDecision(head.step, resolution.decision) } : resolution;
    const ops = parked.resolve(lane, checked);
    if ('retry' in checked) ops.push(...attemptsDeletes(this.ctx, head.event));
    await this.ctx.end.atomically(this.tp, () => this.ctx.writer.write(ops));
  }

  /** Replays the head event of a resolved key, under its original effect id. */
  async replayStep(lane: string, signal: AbortSignal): Promise<ReplayProgress> {
    const parked = requireParking(this.ctx, this.parked);
    const state = parked.get(lane);
    if (state?.status !== 'replaying') return 'released';
    const head = parked.head(lane);
    const resolution = state.resolution;
    const advance = () => parked.advance(lane, head);
    const key = effectKey(this.ctx, head.event);
    if (resolution && 'discard' in resolution) {
      signal.throwIfAborted();
      await this.ctx.end.atomically(this.tp, () =>
        this.ctx.writer.write([...advance(), discardRecordOp(this.ctx, head.event, key), ...this.ctx.runs.clear(head.event)]),
      );
      this.pruning?.recorded(head.event.offset, key!);
      this.ctx.report(Outcome.DISCARDED, head.event, { replayed: true });
      return parked.get(lane) ? 'more' : 'released';
    }
    const event = fromStoredEvent(head.event);
    const recorded = this.lookup(event);
    if (recorded) {
      await endReplayed(this.ctx, event, ...this.endOfRecorded(recorded), advance, signal);
      // Released from its parked key only now: its record may go once the committed offset is past it.
      this.pruning?.recorded(event.offset, key!);
      return parked.get(lane) ? 'more' : 'released';
    }
    // The decisions made before the event was parked, and a person's for the step that parked it.
    const given = resolution && 'decision' in resolution ? { [head.step]: resolution.decision } : undefined;
    const decisions = head.decisions || given ? { ...head.decisions, ...given } : NO_DECISIONS;
    const decidedBy = marksOf(head, given);
    const unit: EventInFlight = { event, value: decodeStored(this.ctx, event), ops: [], outputs: [], decisions, decidedBy, signal };
    const stopped = await runProcessors(this.processors, unit);
    if (stopped?.kind === 'parked') {
      signal.throwIfAborted();
      await repark(this.ctx, parked, lane, head, unit, stopped);
      return 'parked-again';
    }
    await endReplayed(
      this.ctx,
      event,
      stopped ? Outcome.FILTERED : this.through,
      unit.ops,
      unit.outputs,
      advance,
      signal,
      stopped ? undefined : decidedDetails(unit),
      key,
    );
    if (!stopped && this.through === Outcome.APPLIED) this.pruning?.recorded(event.offset, key!);
    return parked.get(lane) ? 'more' : 'released';
  }

  /**
   * Stage 4, effect lookup: the event's effect record, at its ring position or under its effect id
   * (a replay's, a record whose position was not free, a declared id's, or one written before
   * rings existed), if its effect was applied (or a person discarded it).
   */
  private lookup(event: Omit<EngineEvent, 'value'>): EffectRecord | undefined {
    return this.ring?.recorded(event.offset, event.key) ?? recordedEffect(this.ctx, event);
  }

  /**
   * An event that ended for good before: DISCARDED, or a DUPLICATE whose recorded outputs are sent
   * again (on a transactional log they were committed in the effect record's transaction).
   */
  private endOfRecorded(recorded: EffectRecord): [Outcome, StoreOp[], OutRecord[]] {
    if (recorded.discardedAtMs !== undefined) return [Outcome.DISCARDED, [], []];
    return [Outcome.DUPLICATE, [], this.ctx.end.kind === 'transactional' ? [] : recorded.outputs.map(loadOutput)];
  }

  private async checkDecision(step: string, decision: unknown): Promise<unknown> {
    const node = this.ctx.topology.agentSteps.find((s) => s.name === step) ?? this.ctx.topology.agentStep!;
    const checked = await validateDecision(node, decision);
    if (checked.kind === 'failed') throw new Error(`resolve: the decision given was refused: ${checked.error}; the key stays parked`);
    return checked.value;
  }
}

/** Who made the decisions of an event that went through (APPLIED, FORWARDED), for its outcome; nothing when no step decided. */
function decidedDetails(unit: EventInFlight): OutcomeDetails | undefined {
  return unit.decidedBy === NO_MARKS ? undefined : { decidedBy: unit.decidedBy };
}

/**
 * Who made the decisions a replay starts with: as the park record says (a record of an older
 * version says nothing, and its decisions were all the agent steps'), and a person for the step
 * whose decision the resolution gives.
 */
function marksOf(head: ParkedEvent, given: Readonly<Record<string, unknown>> | undefined): Readonly<Record<string, DecidedBy>> {
  if (!head.decisions && !given) return NO_MARKS;
  const marks: Record<string, DecidedBy> = {};
  for (const step of Object.keys(head.decisions ?? {})) marks[step] = head.decidedBy?.[step] ?? 'agent';
  for (const step of Object.keys(given ?? {})) marks[step] = 'person';
  return marks;
}
