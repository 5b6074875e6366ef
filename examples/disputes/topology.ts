/**
 * The disputes example: ChargeDisputed events keyed by account, decided refund / escalate /
 * reject by an agent step, each applied decision written to `dispute-decisions`.
 *
 *     npm run build
 *     ./bin/orderly run dist/examples/disputes/topology.js --bootstrap 127.0.0.1:9092 --group disputes --state-dir .orderly/state/disputes
 *     npx tsx src/cli/main.ts run examples/disputes/topology.ts ...   # the same from source
 *
 * Input `disputes`: key = account, value = JSON `{ disputeId, account, amount, reason }`. A value
 * that is not such a JSON object goes to `disputes.dlq` with its error. A decision that fails the
 * schema is retried, then the event is parked on `disputes.parked` and its account held. Output
 * `dispute-decisions`: key = account, value = `{ disputeId, account, action, rationale }`, header
 * `orderly-effect-id`. Settings: ORDERLY_MODEL_LATENCY_MS (stand-in latency), ORDERLY_MODEL_URL
 * (a real model, see model.ts), ORDERLY_MAX_IN_FLIGHT (default 8), ORDERLY_RETRY_DELAY_MS (default
 * 1000), ORDERLY_TOPIC_PREFIX (put before every topic name, so tests on one broker do not meet).
 */
import { stream, type DecideFn, type Serde } from '../../src/index.js';
import { applyDecision, Decision, type Dispute } from '../../testkit/scenarios/disputes.js';
import { disputeModel } from './model.js';

const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/** JSON with the fields of a dispute; anything else fails to decode, so it is dead-lettered. */
export const disputeSerde: Serde<Dispute> = {
  name: 'dispute-json',
  serialize: (value) => encoder.encode(JSON.stringify(value)),
  deserialize(bytes) {
    const value = JSON.parse(decoder.decode(bytes)) as Partial<Dispute> | null;
    if (typeof value !== 'object' || value === null) throw new Error('not a JSON object');
    for (const field of ['disputeId', 'account', 'reason'] as const) {
      if (typeof value[field] !== 'string') throw new Error(`field '${field}' must be a string`);
    }
    if (typeof value.amount !== 'number') throw new Error("field 'amount' must be a number");
    return value as Dispute;
  },
};

function numberFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a whole number, got '${raw}'`);
  return value;
}

export function disputesTopology() {
  return disputesWith(disputeModel());
}

/** The topology around any decide function: a test passes a fake model (orderly/testkit's topologyProperty injects one). */
export function disputesWith(decide: DecideFn<Dispute, unknown>) {
  const prefix = process.env.ORDERLY_TOPIC_PREFIX ?? '';
  return stream<Dispute>(`${prefix}disputes`, { value: disputeSerde })
    .keyedSerial({ maxInFlight: Math.max(1, numberFromEnv('ORDERLY_MAX_IN_FLIGHT', 8)) })
    .agentStep('decide', decide, { schema: Decision })
    .park({ attempts: 3, retryDelayMs: numberFromEnv('ORDERLY_RETRY_DELAY_MS', 1_000) })
    .applyOnce(applyDecision)
    .to(`${prefix}dispute-decisions`)
    .build();
}

export default disputesTopology();
