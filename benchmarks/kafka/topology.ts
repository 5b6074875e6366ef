import { effect, sleep, stream, type DecideContext, type DecideFn, type Decided } from '../../src/index.js';
import { applyDecision, Decision, standInDecision, type Dispute } from '../../testkit/scenarios/disputes.js';
import { disputeSerde } from '../../examples/disputes/topology.js';

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

/** The soak's effect: per account, how many disputes were decided and the last one. */
const countPerAccount = effect('dispute-decisions', ({ event, decision }: Decided<Dispute, Decision>, { state }) => {
  const row = state.get<{ count: number }>(event.account);
  state.put(event.account, { count: (row?.count ?? 0) + 1, last: event.disputeId });
  return { disputeId: event.disputeId, account: event.account, ...decision };
});

export function benchTopology(options: BenchTopologyOptions) {
  const decide: DecideFn<Dispute, Decision> =
    options.decideMs === 0
      ? (dispute) => standInDecision(dispute)
      : async (dispute: Dispute, ctx: DecideContext) => {
          await sleep(ctx.clock, options.decideMs);
          return standInDecision(dispute);
        };
  return stream<Dispute>(options.topic, { value: disputeSerde })
    .keyedSerial({ maxInFlight: options.maxInFlight })
    .agentStep('decide', decide, { schema: Decision })
    .park({ attempts: 3 })
    .applyOnce(options.perKeyState ? countPerAccount : applyDecision)
    .build();
}
