// A topology of a domain orderly does not ship: insurance claims, in two agent steps. `classify`
// names the claim's category; `assess` reads that decision (`ctx.decisions.classify`) and decides
// the payout. Each step has its own schema, limit and park; the effect records the payout with the
// category it was classified in, once per claim, and sends it to an output topic.
import fc from 'fast-check';
import { z } from 'zod';
import { effect, stream, type DecideContext, type DecideFn, type Decided } from '../../../src/index.js';
import type { TopologyEvent } from '../../../testkit/index.js';

export interface Claim {
  readonly claimId: string;
  readonly policy: string;
  readonly amountCents: number;
  readonly text: string;
}

export const Category = z.object({ category: z.enum(['glass', 'theft', 'water']) });
export const Payout = z.object({ pay: z.boolean(), category: z.enum(['glass', 'theft', 'water']) });
type Payout = z.infer<typeof Payout>;
/** What assess is given: the claim with classify's decision, as the chain carries it. */
export type Classified = Decided<Claim, z.infer<typeof Category>>;

/** What the effect leaves in its state row of a claim: the payout and the category classify gave. */
export interface PayoutRow {
  readonly pay: boolean;
  readonly category: string;
  readonly classifiedAs: string | undefined;
}

export const recordPayout = effect('claim-payouts', ({ event, decision }: Decided<Classified, Payout>, { state, decisions }) => {
  const claim = event.event;
  // Read by name from the context, not from the value the chain carries: both must agree.
  const classified = decisions.classify as { category?: string } | undefined;
  const row: PayoutRow = { pay: decision.pay, category: decision.category, classifiedAs: classified?.category };
  state.put(claim.claimId, row);
  return { claimId: claim.claimId, policy: claim.policy, payCents: decision.pay ? claim.amountCents : 0 };
});

export function claimsTopology(classify: DecideFn<Claim, unknown>, assess: DecideFn<Classified, unknown>) {
  return stream<Claim>('claims')
    .keyedSerial({ maxInFlight: 3 })
    .agentStep('classify', classify, { schema: Category, limit: { calls: 5, windowMs: 10_000 } })
    .park({ attempts: 2, retryDelayMs: 500 })
    .agentStep('assess', assess, { schema: Payout, limit: { calls: 3, windowMs: 10_000 } })
    .park({ attempts: 2, retryDelayMs: 300 })
    .applyOnce(recordPayout)
    .to('payouts')
    .build();
}

/**
 * The stand-in model of both steps. classify reads the claim's text ('garbled' gets an answer its
 * schema refuses: parked at classify); assess reads classify's decision from `ctx.decisions` and
 * pays glass and water claims up to 1,000.00 ('disputed' gets an answer its schema refuses: parked
 * at assess, after classify decided).
 */
export function claimsStandIn(value: Claim | Classified, ctx: DecideContext & { readonly agentStep: string }): unknown {
  if (ctx.agentStep === 'classify') {
    const claim = value as Claim;
    if (claim.text === 'garbled') return { category: 'unknown' };
    return { category: claim.text.includes('window') ? 'glass' : claim.text.includes('stolen') ? 'theft' : 'water' };
  }
  const claim = (value as Classified).event;
  if (claim.text === 'disputed') return { pay: 'maybe' };
  const category = (ctx.decisions.classify as { category: Payout['category'] } | undefined)?.category;
  // Without classify's decision there is nothing to assess: an answer the schema refuses.
  if (category === undefined) return { pay: 'no classification' };
  return { pay: category !== 'theft' && claim.amountCents <= 100_000, category };
}

/** Claims of four policies (the key), a few garbled or disputed. */
export const claimEvents: fc.Arbitrary<TopologyEvent<Claim>[]> = fc
  .array(
    fc.record({
      policy: fc.constantFrom('p1', 'p2', 'p3', 'p4'),
      amountCents: fc.integer({ min: 1_000, max: 200_000 }),
      text: fc.constantFrom('broken window', 'bike stolen', 'pipe burst', 'broken window', 'garbled', 'disputed'),
    }),
    { maxLength: 14 },
  )
  .map((list) => list.map((c, i) => ({ key: c.policy, value: { ...c, claimId: `c-${i}` } })));
