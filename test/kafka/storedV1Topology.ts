// The stored-v1 fixture's topology (test/fixtures/stored-v1), run from source by a broker worker:
// its events and model, with the worker's topic prefix.
import { stream } from '../../src/index.js';
import { applyDecision, Decision } from '../../testkit/scenarios/disputes.js';
import { decideDispute, type FixtureDispute } from '../fixtures/stored-v1/scenario.js';

const prefix = process.env.ORDERLY_TOPIC_PREFIX ?? '';

export default stream<FixtureDispute>(`${prefix}disputes`)
  .keyedSerial({ maxInFlight: 4 })
  .agentStep('decide', decideDispute(), { schema: Decision })
  .park({ attempts: 3, retryDelayMs: 100 })
  .applyOnce(applyDecision)
  .to(`${prefix}dispute-decisions`)
  .build();
