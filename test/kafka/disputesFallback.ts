// The disputes example with its model down for good and the old rules as the fallback: after a
// second of refused calls the step's circuit opens and the old rules decide, marked 'fallback'.
// Run from source (`node --import tsx`) by fallback.test.ts.
import { effect, stream, type Decided } from '../../src/index.js';
import { Decision, type Dispute } from '../../testkit/scenarios/disputes.js';
import { disputeSerde } from '../../examples/disputes/topology.js';
import { legacy } from './disputesAdoption.js';

const prefix = process.env.ORDERLY_TOPIC_PREFIX ?? '';

const record = effect('dispute-decisions', ({ event, decision }: Decided<Dispute, Decision>, { state, decidedBy }) => {
  state.put(event.disputeId, decision);
  return { disputeId: event.disputeId, account: event.account, ...decision, decidedBy: decidedBy.decide };
});

export default stream<Dispute>(`${prefix}disputes`, { value: disputeSerde })
  .keyedSerial({ maxInFlight: 4 })
  .agentStep(
    'decide',
    (): Decision => {
      throw new Error('the model provider is down (503)');
    },
    { schema: Decision },
  )
  // Attempts outlast the circuit's second: no event is parked before the fallback takes over. The
  // circuit stays open for the test (half-open in 10 minutes): a stop must not wait for its timer.
  .park({ attempts: 50, retryDelayMs: 100 })
  .fallback('legacy', legacy, { afterMs: 1_000, halfOpenAfterMs: 600_000 })
  .applyOnce(record)
  .to(`${prefix}dispute-decisions`)
  .build();
