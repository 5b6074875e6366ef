// The disputes example with two agent steps: 'classify' (a stand-in that answers at once or a
// moment later) and then 'decide', which reads the classification in ctx.decisions; each step
// with its own park. Run from source (`node --import tsx`) by the broker's kill -9 test.
import { stream } from '../../src/index.js';
import type { DecideContext } from '../../src/graph/nodes.js';
import { applyDecision, Decision, type Dispute } from '../../testkit/scenarios/disputes.js';
import { checkedSchema, asObject } from '../../testkit/scenarios/checkedSchema.js';
import { disputeSerde } from '../../examples/disputes/topology.js';
import { disputeModel } from '../../examples/disputes/model.js';

const prefix = process.env.ORDERLY_TOPIC_PREFIX ?? '';

interface Kind {
  readonly kind: 'small' | 'large';
}
const Kind = checkedSchema<Kind>('orderly-disputes-kind', (value) => {
  const kind = asObject(value)?.kind;
  return kind === 'small' || kind === 'large' ? [] : [`a classification is { kind: 'small' | 'large' }, got ${JSON.stringify(value)}`];
});

/** Half its answers come at once, half after a few milliseconds. */
function classify(dispute: Dispute): Kind | Promise<Kind> {
  const kind: Kind = { kind: dispute.amount < 100 ? 'small' : 'large' };
  return dispute.amount % 2 === 0 ? kind : new Promise((resolve) => setTimeout(() => resolve(kind), 5));
}

const model = disputeModel();

/** The example's model, after checking that the classification came before it. */
function decide(dispute: Dispute, ctx: DecideContext) {
  if (asObject(ctx.decisions.classify)?.kind === undefined) throw new Error(`decide ran before classify for ${ctx.effectId}`);
  return model(dispute, ctx);
}

export default stream<Dispute>(`${prefix}disputes`, { value: disputeSerde })
  .keyedSerial({ maxInFlight: Number(process.env.ORDERLY_MAX_IN_FLIGHT ?? 4) })
  .agentStep('classify', classify, { schema: Kind })
  .park({ attempts: 2, retryDelayMs: 100 })
  .mapValues(({ event }) => event)
  .agentStep('decide', decide, { schema: Decision })
  .park({ attempts: 3, retryDelayMs: 100 })
  .applyOnce(applyDecision)
  .to(`${prefix}dispute-decisions`)
  .build();
