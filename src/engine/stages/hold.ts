import type { EngineContext } from '../engineContext.js';
import { toStoredEvent, type EngineEvent } from '../events.js';
import { Outcome } from '../outcomes.js';
import type { ParkedEvent, ParkedKeys } from '../parkedKeys.js';
import { parkRecord } from '../parkRecords.js';
import { parkedResponse, reportParked } from './exhausted.js';

/**
 * Stage: hold. An event of a parked key that has not ended yet waits behind the parked event,
 * durably, in order; its park record goes to the topic of the park that holds the key.
 */
export async function hold(ctx: EngineContext, parked: ParkedKeys, event: EngineEvent): Promise<void> {
  const stored = parked.findHeld(event.effectId);
  if (stored && stored.event.offset !== event.offset) {
    // A copy of a parked or held event at another offset (the same declared effect id: a producer
    // wrote it twice), not a redelivery: it ends here, reported at its own offset, and its twin is
    // applied once (or discarded) when the key is resolved.
    ctx.report(Outcome.DUPLICATE, event);
    return;
  }
  if (stored) {
    // A redelivery of an event already parked or held: hold nothing twice, and send its park
    // record again (a crash may have come between the parking's write and its record), except
    // on a transactional log: there the record was committed in the parking's transaction, with
    // the state that says the event is parked, so a read_committed reader has it once.
    if (ctx.end.kind !== 'transactional') await ctx.log.produce([parkRecord(parkTopic(ctx, stored.step), stored), ...parkedResponse(ctx, stored)]);
    if (stored.reason === 'POISON') reportParked(ctx, stored);
    else ctx.report(Outcome.HELD, event);
    return;
  }
  // Held under the step that parked its key: a resolution of the key replays it from there.
  const step = parked.head(event.lane).step;
  const held: ParkedEvent = { event: toStoredEvent(event), reason: 'HELD', step, attempts: 0, errors: [], parkedAtMs: ctx.clock.now() };
  await ctx.end.atomically(event, async () => {
    await ctx.writer.write(parked.hold(held));
    await ctx.log.produce([parkRecord(parkTopic(ctx, step), held), ...parkedResponse(ctx, held)]);
  });
  ctx.report(Outcome.HELD, event);
}

/** The parking topic of the park after `step` (the first park's, for a step no longer in the topology). */
export function parkTopic(ctx: EngineContext, step: string): string {
  return (ctx.topology.parkAfter(step) ?? ctx.topology.park!).topic;
}
