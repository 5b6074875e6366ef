import { sleep, stream, type DecideContext, type DecideFn } from '../../src/index.js';
import { applyDecision, Decision, standInDecision, type Dispute } from '../../testkit/scenarios/disputes.js';
import { disputeSerde } from '../../examples/disputes/topology.js';

/** The benchmark's topology: the disputes example's shape (schema-checked decide, park, applyOnce on LevelDB), with a decide of a fixed latency. */
export interface BenchTopologyOptions {
  readonly topic: string;
  /** 0: decide answers synchronously. */
  readonly decideMs: number;
  readonly maxInFlight: number;
}

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
    .applyOnce(applyDecision)
    .build();
}
