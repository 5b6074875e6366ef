// The disputes example through topologyProperty: its topology, with the fake model in place of its own.
import fc from 'fast-check';
import { standIn } from '../../../examples/disputes/model.js';
import type { Dispute } from '../../../testkit/scenarios/disputes.js';
import type { TopologyEvent } from '../../../testkit/index.js';

/** Disputes of five accounts (the key); about one in ten has a reason the stand-in cannot decide. */
export const disputeEvents: fc.Arbitrary<TopologyEvent<Dispute>[]> = fc
  .array(
    fc.record({
      account: fc.constantFrom('acct-1', 'acct-2', 'acct-3', 'acct-4', 'acct-5'),
      amount: fc.integer({ min: 1, max: 500 }),
      reason: fc.constantFrom(
        'fraud',
        'not-received',
        'duplicate',
        'not-as-described',
        'fraud',
        'not-received',
        'duplicate',
        'not-as-described',
        'fraud',
        'unparseable',
      ),
    }),
    { maxLength: 20 },
  )
  .map((list) => list.map((d, i) => ({ key: d.account, value: { ...d, disputeId: `d-${i}` } })));

/** The stand-in's decisions, behind a provider limit the example does not declare: the engine learns it from the 429s. */
export const disputeModelStandIn = { decide: (dispute: Dispute) => standIn(dispute), latencyMs: { min: 0, max: 3_000 }, limit: { calls: 4, windowMs: 10_000 } };
