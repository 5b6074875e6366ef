// The disputes example with timeouts on its agent step and its effect and park({ onExhausted:
// 'skip' }), for the broker test of both; run from source (`node --import tsx`), as it is not part
// of the build. Reasons that trigger each:
// - 'unparseable': every answer fails the schema, so its attempts run out and it is skipped;
// - 'hangs': its first call never answers until its signal aborts it (the timeout); the second answers;
// - 'ledger-hangs': its effect's first run hangs the same way; the second applies it.
import { effect, stream, type DecideContext, type Decided, type EffectContext } from '../../src/index.js';
import { applyDecision, Decision, type Dispute } from '../../testkit/scenarios/disputes.js';
import { disputeSerde } from '../../examples/disputes/topology.js';
import { disputeModel } from '../../examples/disputes/model.js';

const prefix = process.env.ORDERLY_TOPIC_PREFIX ?? '';
/** Far above the stand-in model's latency (20 ms in the tests), so that only a hung call reaches it. */
export const TIMEOUT_MS = 2_000;
const model = disputeModel();

/** Settles only when the engine aborts the call. */
function hang(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }));
}

function decide(dispute: Dispute, ctx: DecideContext): Promise<unknown> {
  return dispute.reason === 'hangs' && ctx.attempt === 1 ? hang(ctx.signal) : model(dispute, ctx);
}

const hungOnce = new Set<string>();
const apply = effect(
  applyDecision.name,
  (value: Decided<Dispute, Decision>, ctx: EffectContext) => {
    if (value.event.reason !== 'ledger-hangs' || hungOnce.has(value.event.disputeId)) return applyDecision.apply(value, ctx);
    hungOnce.add(value.event.disputeId);
    return hang(ctx.signal);
  },
  { timeoutMs: TIMEOUT_MS },
);

export default stream<Dispute>(`${prefix}disputes`, { value: disputeSerde })
  .keyedSerial({ maxInFlight: 8 })
  .agentStep('decide', decide, { schema: Decision, timeoutMs: TIMEOUT_MS })
  .park({ attempts: 3, retryDelayMs: 100, onExhausted: 'skip' })
  .applyOnce(apply)
  .to(`${prefix}dispute-decisions`)
  .build();
