import type { OutRecord } from '../../ports/log.js';
import type { StoreOp } from '../../ports/store.js';
import { attemptsOwners } from '../attemptsRecords.js';
import { deadLetterRecord } from '../deadLetters.js';
import type { EngineContext } from '../engineContext.js';
import { fromStoredEvent, toStoredEvent, type EngineEvent } from '../events.js';
import { exhaustedFailure } from '../operatorFailure.js';
import { Outcome } from '../outcomes.js';
import type { ParkedEvent, ParkedKeys } from '../parkedKeys.js';
import { parkRecord } from '../parkRecords.js';
import type { EventInFlight, Stopped } from '../processors/processor.js';

type Parked = Stopped & { kind: 'parked' };

/**
 * Stage: an event from the log whose attempts ran out at a step (or whose user function threw)
 * ends as that step's park() disposes: parked with its key held, dead-lettered, skipped, or the
 * engine stops. Its attempts records go with it, and its run journals unless it is parked.
 */
export async function exhausted(ctx: EngineContext, parked: ParkedKeys | undefined, unit: EventInFlight, stopped: Parked): Promise<void> {
  const { event } = unit;
  const { park, attempts } = stopped;
  const last = attempts.errors[attempts.errors.length - 1];
  const details = last ? { error: last.error, attempt: last.attempt } : undefined;
  switch (park.onExhausted) {
    case 'park': {
      const poison = poisonOf(ctx, event, stopped, unit);
      await ctx.end.atomically(event, async () => {
        await ctx.writer.write([...requireParking(ctx, parked).park(poison), ...attemptsDeletes(ctx, event)]);
        await ctx.log.produce([parkRecord(park.topic, poison), ...parkedResponse(ctx, poison)]);
      });
      reportParked(ctx, poison);
      return;
    }
    case 'dlq':
      // The record goes out first: a crash before the write runs the event's attempts again and
      // may dead-letter it twice (one effect id), never lose it.
      await ctx.end.atomically(event, async () => {
        await ctx.log.produce([
          deadLetterRecord(ctx.topology.source.deadLetterTopic, event, last?.error ?? 'attempts ran out', attempts.errors),
          ...ctx.jobs.response(event, { state: 'failed', reason: `dead-lettered: ${last?.error ?? 'attempts ran out'}` }),
        ]);
        await ctx.writer.write(endDeletes(ctx, event));
      });
      ctx.report(Outcome.DEAD_LETTERED, event, details);
      return;
    case 'skip': {
      const response = ctx.jobs.response(event, { state: 'failed', reason: `skipped: ${last?.error ?? 'attempts ran out'}` });
      if (response.length === 0) await ctx.end.atomically(event, () => ctx.writer.write(endDeletes(ctx, event)));
      else {
        // The response goes out first, like a dead letter: a crash before the write runs the attempts again.
        await ctx.end.atomically(event, async () => {
          await ctx.log.produce(response);
          await ctx.writer.write(endDeletes(ctx, event));
        });
      }
      ctx.report(Outcome.SKIPPED, event, details);
      return;
    }
    case 'fail':
      throw exhaustedFailure(event, attempts);
  }
}

/** A replayed event failed again: its key is parked again, with it at the head. */
export async function repark(ctx: EngineContext, parked: ParkedKeys, lane: string, head: ParkedEvent, unit: EventInFlight, stopped: Parked): Promise<void> {
  const poison = poisonOf(ctx, fromStoredEvent(head.event), stopped, unit);
  // The record goes out first: the event's offset is committed, so a crash after the write would
  // lose it for good, while a crash before the write replays the event and parks it again.
  await ctx.end.atomically(head.event, async () => {
    await ctx.log.produce([parkRecord(stopped.park.topic, poison), ...parkedResponse(ctx, poison)]);
    await ctx.writer.write([...parked.repark(lane, poison), ...attemptsDeletes(ctx, head.event)]);
  });
  reportParked(ctx, poison, true);
}

/** The event's end: none of its attempts records may outlive it. */
export function attemptsDeletes(ctx: EngineContext, event: { topic: string; partition: number; offset: number }): StoreOp[] {
  return ctx.attempts.clear(attemptsOwners(ctx.topology), event);
}

/**
 * The deletes of an event that ends here without an effect (dead-lettered, skipped): its attempts
 * records and its run journals. A parked event keeps its journals: its replay resumes them.
 */
function endDeletes(ctx: EngineContext, event: EngineEvent): StoreOp[] {
  return [...attemptsDeletes(ctx, event), ...ctx.runs.clear(event)];
}

/** The response of a parked or held event, when the topology has `.respond()`. */
export function parkedResponse(ctx: EngineContext, parked: ParkedEvent): OutRecord[] {
  const last = parked.errors[parked.errors.length - 1];
  const reason = parked.reason === 'HELD' ? 'held: an earlier event of its key is parked' : `parked: ${last?.error ?? 'its attempts ran out'}`;
  return ctx.jobs.response(parked.event, { state: 'parked', reason }, parked.calls);
}

/** The parked form of an event, with the decisions made before the step that failed and who made them (a replay uses them). */
function poisonOf(ctx: EngineContext, event: EngineEvent, stopped: Parked, { decisions, decidedBy }: EventInFlight): ParkedEvent {
  const { step, attempts } = stopped;
  const before = Object.keys(decisions).length > 0 ? { decisions, decidedBy } : {};
  const calls = ctx.jobs.lastCalls(event);
  return {
    event: toStoredEvent(event),
    reason: 'POISON',
    step,
    attempts: attempts.count,
    errors: attempts.errors,
    parkedAtMs: ctx.clock.now(),
    ...before,
    ...(calls ? { calls } : {}),
  };
}

export function reportParked(ctx: EngineContext, poison: ParkedEvent, replayed = false): void {
  const last = poison.errors[poison.errors.length - 1];
  ctx.report(Outcome.PARKED, poison.event, {
    ...(last ? { error: last.error, attempt: last.attempt } : {}),
    ...(replayed ? { replayed } : {}),
  });
}

export function requireParking(ctx: EngineContext, parked: ParkedKeys | undefined): ParkedKeys {
  if (!parked) throw new Error(`${ctx.topology.source.topic}: this topology has no park(), so no key is ever parked`);
  return parked;
}
