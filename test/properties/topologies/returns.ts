// A topology of a domain orderly does not ship: product returns. A filter drops empty returns, a
// mapValues prices them, an agent step inspects each (a schema and a declared limit), park holds a
// customer's later returns behind one the model cannot decide, and the effect records each
// verdict once and sends it to an output topic.
import fc from 'fast-check';
import { z } from 'zod';
import { effect, stream, type DecideFn, type Decided } from '../../../src/index.js';
import type { TopologyEvent } from '../../../testkit/index.js';

export interface Return {
  readonly returnId: string;
  readonly customer: string;
  readonly quantity: number;
  readonly unitCents: number;
  readonly note: string;
}
export interface PricedReturn extends Return {
  readonly totalCents: number;
}

export const Verdict = z.object({ refund: z.boolean(), reason: z.string().min(1) });
export type Verdict = z.infer<typeof Verdict>;

export const inspectLimit = { calls: 4, windowMs: 10_000 };

export const recordVerdict = effect('return-verdicts', ({ event, decision }: Decided<PricedReturn, Verdict>, { state }) => {
  state.put(event.returnId, { refund: decision.refund, totalCents: event.totalCents });
  return { returnId: event.returnId, customer: event.customer, refundCents: decision.refund ? event.totalCents : 0 };
});

/**
 * `declaredIds`: each return's effect id is its `returnId` (the stream's `effectId`), so that a
 * return the producer wrote twice is applied once.
 */
export function returnsTopology(inspect: DecideFn<PricedReturn, unknown>, options: { readonly declaredIds?: boolean } = {}) {
  return stream<Return>('returns', options.declaredIds ? { effectId: ({ value }) => value.returnId } : {})
    .filter((r) => r.quantity > 0, { name: 'non-empty' })
    .mapValues((r): PricedReturn => ({ ...r, totalCents: r.quantity * r.unitCents }), { name: 'priced' })
    .keyedSerial({ maxInFlight: 3 })
    .agentStep('inspect', inspect, { schema: Verdict, limit: inspectLimit })
    .park({ attempts: 2, retryDelayMs: 500 })
    .applyOnce(recordVerdict)
    .to('refunds')
    .build();
}

/** The stand-in model: refunds small returns; a note of 'garbled' gets an answer the schema refuses. */
export function inspectStandIn(r: PricedReturn): unknown {
  if (r.note === 'garbled') return { refund: 'maybe' };
  return { refund: r.totalCents <= 5_000, reason: r.totalCents <= 5_000 ? 'small return' : 'needs a look' };
}

/** Returns of four customers (the key), some empty, a few garbled. */
export const returnEvents: fc.Arbitrary<TopologyEvent<Return>[]> = fc
  .array(
    fc.record({
      customer: fc.constantFrom('c1', 'c2', 'c3', 'c4'),
      quantity: fc.integer({ min: 0, max: 3 }),
      unitCents: fc.integer({ min: 100, max: 4_000 }),
      note: fc.constantFrom('', '', '', 'scratched', 'garbled'),
    }),
    { maxLength: 16 },
  )
  .map((list) => list.map((r, i) => ({ key: r.customer, value: { ...r, returnId: `r-${i}` } })));

/**
 * The same returns, some written twice by the producer (a retry after a lost acknowledgement): the
 * copy, with the same `returnId` and key, comes right after its original or a few events later.
 */
export const returnEventsWithCopies: fc.Arbitrary<TopologyEvent<Return>[]> = returnEvents.chain((list) =>
  fc.array(fc.record({ of: fc.nat(), after: fc.integer({ min: 0, max: 3 }) }), { maxLength: 4 }).map((copies) => {
    const out = [...list];
    if (list.length === 0) return out;
    for (const { of, after } of copies) {
      const original = list[of % list.length]!;
      const at = Math.min(out.indexOf(original) + 1 + after, out.length);
      out.splice(at, 0, { ...original });
    }
    return out;
  }),
);
