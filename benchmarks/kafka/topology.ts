import type { DecideContext, DecideFn, Decided } from '../../src/index.js';
import type { Decision, Dispute } from '../../testkit/scenarios/disputes.js';
import type { CompiledOrderly } from './compiled.js';

/** The benchmark's topology: the disputes example's shape (schema-checked decide, park, applyOnce on LevelDB), with a decide of a fixed latency. */
export interface BenchTopologyOptions {
  readonly topic: string;
  /** 0: decide answers synchronously. */
  readonly decideMs: number;
  readonly maxInFlight: number;
  /**
   * The soak's effect: a row per account (a running count and the last dispute), so that the
   * user's own state stays bounded and the soak measures orderly's. The default effect
   * (applyDecision) keeps a row per dispute, which grows with every event by design.
   */
  readonly perKeyState?: boolean;
}

/** Builds it from the compiled orderly the worker loaded ({@link CompiledOrderly}). */
export function benchTopology(compiled: CompiledOrderly, options: BenchTopologyOptions) {
  const { stream, effect } = compiled.orderly;
  const { applyDecision, Decision, standInDecision } = compiled.disputes;
  const decide: DecideFn<Dispute, Decision> =
    options.decideMs === 0
      ? (dispute) => standInDecision(dispute)
      : async (dispute: Dispute, ctx: DecideContext) => {
          // The clock port's timer, as orderly's `sleep` (which builds before 9afca58 do not export) waits on it.
          await new Promise<void>((resolve) => ctx.clock.setTimer(options.decideMs, resolve));
          return standInDecision(dispute);
        };
  // The soak's effect: per account, how many disputes were decided and the last one.
  const countPerAccount = () =>
    effect('dispute-decisions', ({ event, decision }: Decided<Dispute, Decision>, { state }) => {
      const row = state.get<{ count: number }>(event.account);
      state.put(event.account, { count: (row?.count ?? 0) + 1, last: event.disputeId });
      return { disputeId: event.disputeId, account: event.account, ...decision };
    });
  return stream<Dispute>(options.topic, { value: compiled.disputesExample.disputeSerde })
    .keyedSerial({ maxInFlight: options.maxInFlight })
    .agentStep('decide', decide, { schema: Decision })
    .park({ attempts: 3 })
    .applyOnce(options.perKeyState ? countPerAccount() : applyDecision)
    .build();
}
