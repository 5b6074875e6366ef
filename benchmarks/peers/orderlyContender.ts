import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import type { RunningTopology } from '../../src/kafka/index.js';
import type { Dispute } from '../../testkit/scenarios/disputes.js';
import { loadCompiled, type CompiledOrderly } from '../kafka/compiled.js';
import { send } from '../kafka/meter.js';
import type { ContenderSpec } from './spec.js';

/** A key's state: how many of its events were applied, and the last one's id. */
interface Tally {
  readonly count: number;
  readonly lastId: string;
}

/** One output record per event: its id and its key's count after it. */
export interface TallyOutput {
  readonly id: string;
  readonly count: number;
}

/**
 * The peers benchmark's work in orderly: stream → keyedSerial → applyOnce (an effect that updates
 * its key's tally in the effect's state table, LevelDB with its changelog) → to(output).
 */
export function tallyTopology(compiled: CompiledOrderly, spec: Pick<ContenderSpec, 'input' | 'output' | 'waitMs' | 'maxInFlight'>) {
  const { effect, stream } = compiled.orderly;
  let first = true;
  const tally = effect<Dispute, TallyOutput>('peers-tally', async (event, { key, state }) => {
    if (first) {
      first = false;
      send({ type: 'first' });
    }
    if (spec.waitMs > 0) await sleep(spec.waitMs);
    const row = key ?? '';
    const count = (state.get<Tally>(row)?.count ?? 0) + 1;
    state.put(row, { count, lastId: event.disputeId } satisfies Tally);
    return { id: event.disputeId, count };
  });
  return stream<Dispute>(spec.input).keyedSerial({ maxInFlight: spec.maxInFlight }).applyOnce(tally).to(spec.output).build();
}

/**
 * Runs orderly's worker (KafkaLog, Engine, LevelDB state with changelogs) on the tally topology
 * until stopped, compiled as users run it ({@link loadCompiled}).
 */
export async function runOrderlyContender(spec: ContenderSpec): Promise<RunningTopology> {
  const compiled = await loadCompiled();
  return compiled.kafka.runTopology({
    topology: tallyTopology(compiled, spec),
    bootstrap: spec.bootstrap,
    group: spec.group,
    stateDir: spec.stateDir,
    logger: pino({ level: 'warn' }, pino.destination(2)),
    commit: { everyMs: spec.commitEveryMs },
    storedFormat: spec.storedFormat,
  });
}
