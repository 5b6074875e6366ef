// The disputes example whose decide runs two durable steps before its model: 'lookup-account',
// then 'open-case'. Each step's tool appends `<effect id>\t<step>\t<pid>` to the file named by
// ORDERLY_TOOL_LOG as it begins; with ORDERLY_TOOL_HANG=<step>, that step's tool then hangs, so a
// test can kill the worker between two steps. Run from source by the broker's durable steps test.
import { appendFileSync } from 'node:fs';
import { stream } from '../../src/index.js';
import type { DecideContext, DurableStepContext } from '../../src/graph/nodes.js';
import { applyDecision, Decision, type Dispute } from '../../testkit/scenarios/disputes.js';
import { disputeSerde } from '../../examples/disputes/topology.js';
import { disputeModel } from '../../examples/disputes/model.js';

const prefix = process.env.ORDERLY_TOPIC_PREFIX ?? '';
const toolLog = process.env.ORDERLY_TOOL_LOG;
if (!toolLog) throw new Error('disputesDurableSteps: set ORDERLY_TOOL_LOG to the file its tool writes each run to');
const hang = process.env.ORDERLY_TOOL_HANG;

/** The outside system: notes each run, then answers (or, for the step to hang, never does). */
function tool({ effectId, step }: DurableStepContext): Promise<{ effectId: string; step: string }> {
  appendFileSync(toolLog!, `${effectId}\t${step}\t${process.pid}\n`);
  if (step === hang) return new Promise(() => undefined);
  return Promise.resolve({ effectId, step });
}

const model = disputeModel();

async function decide(dispute: Dispute, ctx: DecideContext) {
  await ctx.step('lookup-account', tool);
  await ctx.step('open-case', tool);
  return model(dispute, ctx);
}

export default stream<Dispute>(`${prefix}disputes`, { value: disputeSerde })
  .keyedSerial({ maxInFlight: 2 })
  .agentStep('decide', decide, { schema: Decision })
  .park({ attempts: 3, retryDelayMs: 100 })
  .applyOnce(applyDecision)
  .to(`${prefix}dispute-decisions`)
  .build();
