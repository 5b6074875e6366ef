import type { LogRecord, TopicPartition } from '../ports/log.js';
import type { StoreOp } from '../ports/store.js';
import { attemptsKeyOf, validateDecision, type AttemptsRecord } from './agentStepRunner.js';
import type { EffectHorizon } from './effectHorizon.js';
import { deadLetterRecord } from './deadLetters.js';
import type { EngineContext } from './engineContext.js';
import { fromStoredEvent, toStoredEvent, type EngineEvent } from './events.js';
import { exhaustedFailure } from './operatorFailure.js';
import { Outcome } from './outcomes.js';
import type { ParkedEvent, ParkedKeys, Resolution } from './parkedKeys.js';
import { parkRecord } from './parkRecords.js';
import type { EventPipeline } from './pipeline.js';

/** An event's end that has landed and is still becoming durable. */
export interface Landed {
  /** Settles once the end is durable; rejects if it never will be. */
  readonly durable: Promise<void>;
}

/** What a replay step left: whether the key still has events to replay. */
export type ReplayProgress = 'more' | 'released' | 'parked-again';

/**
 * The units of work of a key lane: an event from the log (decode, hold it behind a parked key,
 * or run it, parking it if its step fails), and one replay step of a resolved key.
 */
export class LaneWork {
  constructor(
    private readonly ctx: EngineContext,
    private readonly pipeline: EventPipeline,
    private readonly tp: TopicPartition,
    private readonly parked: ParkedKeys | undefined,
    private readonly horizon: EffectHorizon | undefined,
  ) {}

  /**
   * Runs one event from the log; rejects with the signal's reason if it is aborted before the
   * event's end is recorded. Settles once the event's end has landed: with `durable` when it is
   * not durable yet (see {@link RunOptions.untilLanded}), the lane may go on while the event
   * must not count as finished before `durable` settles.
   */
  async processRecord(record: LogRecord, signal: AbortSignal): Promise<Landed | undefined> {
    const decoded = this.pipeline.decode(record);
    if (!decoded.ok) {
      await this.pipeline.deadLetter(decoded.event, decoded.error);
      return undefined;
    }
    const { event, value } = decoded;
    const unrecorded = this.horizon?.beyond(event.offset) ?? false;
    if (this.parked?.get(event.lane) && (unrecorded || !this.pipeline.isDone(event))) {
      await this.hold(event);
      return undefined;
    }
    const result = await this.pipeline.run(event, value, { signal, unrecorded, untilLanded: true });
    if (result.kind === 'parked') {
      signal.throwIfAborted();
      await this.exhausted(event, result.attempts);
      return undefined;
    }
    // Wrapped: an async function returning the promise itself would wait for it.
    return result.durable && { durable: result.durable };
  }

  /** Checks a resolution and makes it durable; the lane then replays the key. */
  async resolve(lane: string, resolution: Resolution): Promise<void> {
    const parked = this.requireParking();
    const state = parked.get(lane);
    if (!state) throw new Error(`resolve: key '${lane}' of ${this.tp.topic}/${this.tp.partition} is not parked`);
    const checked = 'decision' in resolution ? { decision: await this.checkDecision(resolution.decision) } : resolution;
    const head = parked.head(lane);
    const ops = parked.resolve(lane, checked);
    if ('retry' in checked) ops.push({ type: 'del', key: attemptsKeyOf(this.ctx.topology.agentStep!, head.event) });
    await this.ctx.writer.write(ops);
  }

  /** Replays the head event of a resolved key, under its original effect id. */
  async replayStep(lane: string, signal: AbortSignal): Promise<ReplayProgress> {
    const parked = this.requireParking();
    const state = parked.get(lane);
    if (state?.status !== 'replaying') return 'released';
    const head = parked.head(lane);
    const resolution = state.resolution;
    if (resolution && 'discard' in resolution) {
      signal.throwIfAborted();
      await this.ctx.writer.write([...parked.advance(lane, head), this.pipeline.discardRecord(head.event)]);
      this.ctx.report(Outcome.DISCARDED, head.event, { replayed: true });
    } else {
      const event = fromStoredEvent(head.event);
      const result = await this.pipeline.run(event, this.pipeline.decodeStored(event), {
        endOps: () => parked.advance(lane, head),
        replayed: true,
        signal,
        ...(resolution && 'decision' in resolution ? { decision: { value: resolution.decision } } : {}),
      });
      if (result.kind === 'parked') {
        signal.throwIfAborted();
        await this.repark(lane, head, result.attempts);
        return 'parked-again';
      }
    }
    return parked.get(lane) ? 'more' : 'released';
  }

  private async hold(event: EngineEvent): Promise<void> {
    const parked = this.requireParking();
    const stored = parked.findHeld(event.effectId);
    if (stored) {
      // A redelivery of an event already parked or held: hold nothing twice, and send its park
      // record again (a crash may have come between the parking's write and its record), except
      // on an exactly-once log: there the record was committed in the parking's transaction, with
      // the state that says the event is parked, so a read_committed reader has it once.
      if (!this.ctx.log.atomic) await this.ctx.log.produce([parkRecord(this.ctx.topology.park!.topic, stored), ...this.parkedResponse(stored)]);
      if (stored.reason === 'POISON') this.reportParked(stored);
      else this.ctx.report(Outcome.HELD, event);
      return;
    }
    const held: ParkedEvent = { event: toStoredEvent(event), reason: 'HELD', step: this.stepName(), attempts: 0, errors: [], parkedAtMs: this.ctx.clock.now() };
    await this.ctx.atomically(async () => {
      await this.ctx.writer.write(parked.hold(held));
      await this.ctx.log.produce([parkRecord(this.ctx.topology.park!.topic, held), ...this.parkedResponse(held)]);
    });
    this.ctx.report(Outcome.HELD, event);
  }

  /** An event from the log whose attempts ran out: ends as its park() disposes. */
  private async exhausted(event: EngineEvent, attempts: AttemptsRecord): Promise<void> {
    const park = this.ctx.topology.park!;
    const last = attempts.errors[attempts.errors.length - 1];
    const details = last ? { error: last.error, attempt: last.attempt } : undefined;
    switch (park.onExhausted) {
      case 'park':
        return this.park(event, attempts);
      case 'dlq':
        // The record goes out first: a crash before the write runs the event's attempts again and
        // may dead-letter it twice (one effect id), never lose it.
        await this.ctx.atomically(async () => {
          await this.ctx.log.produce([
            deadLetterRecord(this.ctx.topology.source.deadLetterTopic, event, last?.error ?? 'attempts ran out', attempts.errors),
            ...this.ctx.jobs.response(event, { state: 'failed', reason: `dead-lettered: ${last?.error ?? 'attempts ran out'}` }),
          ]);
          await this.ctx.writer.write([this.attemptsDelete(event)]);
        });
        this.ctx.report(Outcome.DEAD_LETTERED, event, details);
        return;
      case 'skip': {
        const response = this.ctx.jobs.response(event, { state: 'failed', reason: `skipped: ${last?.error ?? 'attempts ran out'}` });
        // The response goes out first, like a dead letter: a crash before the write runs the attempts again.
        await this.ctx.atomically(async () => {
          if (response.length > 0) await this.ctx.log.produce(response);
          await this.ctx.writer.write([this.attemptsDelete(event)]);
        });
        this.ctx.report(Outcome.SKIPPED, event, details);
        return;
      }
      case 'fail':
        throw exhaustedFailure(event, attempts);
    }
  }

  private attemptsDelete(event: EngineEvent): StoreOp {
    return { type: 'del', key: attemptsKeyOf(this.ctx.topology.agentStep!, event) };
  }

  private async park(event: EngineEvent, attempts: AttemptsRecord): Promise<void> {
    const parked = this.requireParking();
    const poison = this.poison(event, attempts);
    await this.ctx.atomically(async () => {
      await this.ctx.writer.write([...parked.park(poison), { type: 'del', key: attemptsKeyOf(this.ctx.topology.agentStep!, event) }]);
      await this.ctx.log.produce([parkRecord(this.ctx.topology.park!.topic, poison), ...this.parkedResponse(poison)]);
    });
    this.reportParked(poison);
  }

  private async repark(lane: string, head: ParkedEvent, attempts: AttemptsRecord): Promise<void> {
    const poison = this.poison(fromStoredEvent(head.event), attempts);
    // The record goes out first: the event's offset is committed, so a crash after the write would
    // lose it for good, while a crash before the write replays the event and parks it again.
    await this.ctx.atomically(async () => {
      await this.ctx.log.produce([parkRecord(this.ctx.topology.park!.topic, poison), ...this.parkedResponse(poison)]);
      await this.ctx.writer.write([...this.requireParking().repark(lane, poison), { type: 'del', key: attemptsKeyOf(this.ctx.topology.agentStep!, head.event) }]);
    });
    this.reportParked(poison, true);
  }

  /** The response of a parked or held event, when the topology has `.respond()`. */
  private parkedResponse(parked: ParkedEvent): ReturnType<EngineContext['jobs']['response']> {
    const last = parked.errors[parked.errors.length - 1];
    const reason = parked.reason === 'HELD' ? 'held: an earlier event of its key is parked' : `parked: ${last?.error ?? 'its attempts ran out'}`;
    return this.ctx.jobs.response(parked.event, { state: 'parked', reason });
  }

  private poison(event: EngineEvent, attempts: AttemptsRecord): ParkedEvent {
    return { event: toStoredEvent(event), reason: 'POISON', step: this.stepName(), attempts: attempts.count, errors: attempts.errors, parkedAtMs: this.ctx.clock.now() };
  }

  private reportParked(poison: ParkedEvent, replayed = false): void {
    const last = poison.errors[poison.errors.length - 1];
    this.ctx.report(Outcome.PARKED, poison.event, {
      ...(last ? { error: last.error, attempt: last.attempt } : {}),
      ...(replayed ? { replayed } : {}),
    });
  }

  private async checkDecision(decision: unknown): Promise<unknown> {
    const step = this.ctx.topology.agentStep!;
    const checked = await validateDecision(step, decision);
    if (checked.kind === 'failed') throw new Error(`resolve: the decision given was refused: ${checked.error}; the key stays parked`);
    return checked.decision;
  }

  private stepName(): string {
    return this.ctx.topology.agentStep!.name;
  }

  private requireParking(): ParkedKeys {
    if (!this.parked) throw new Error(`${this.ctx.topology.source.topic}: this topology has no park(), so no key is ever parked`);
    return this.parked;
  }
}
