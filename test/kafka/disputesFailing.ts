// The disputes example with park({ onExhausted: 'fail' }), for the broker test of that
// disposition; run from source (`node --import tsx`), as it is not part of the build.
import { stream } from '../../src/index.js';
import { applyDecision, Decision, type Dispute } from '../../testkit/scenarios/disputes.js';
import { disputeSerde } from '../../examples/disputes/topology.js';
import { disputeModel } from '../../examples/disputes/model.js';

const prefix = process.env.ORDERLY_TOPIC_PREFIX ?? '';

export default stream<Dispute>(`${prefix}disputes`, { value: disputeSerde })
  .keyedSerial({ maxInFlight: 8 })
  .agentStep('decide', disputeModel(), { schema: Decision })
  .park({ attempts: 3, retryDelayMs: 100, onExhausted: 'fail' })
  .applyOnce(applyDecision)
  .to(`${prefix}dispute-decisions`)
  .build();
