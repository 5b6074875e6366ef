import type { EffectRecord } from '../src/engine/outputs.js';
import { stateKeys } from '../src/state/stateKeys.js';
import type { TopologyTestDriver } from './driver.js';
import type { InvariantViolation } from './violations.js';

/** The row the crash scenario's effect appends each event to: every event applied to its key, in order. */
export interface AppliedRow {
  readonly applied: readonly number[];
}

/**
 * The state shows each recorded effect once, and nothing else: for every key, the events its
 * table row says were applied are exactly the events with an effect record (not discarded), in
 * log order (records pruned since count as they were). The effect appends (an idempotent put would hide a second application), so an effect
 * applied twice, or applied without its record, shows. Read from what a restart would see.
 * `numberOf` gives the number the effect appends for an event at a partition and offset.
 */
export async function checkStateMatchesEffects(
  driver: TopologyTestDriver,
  effect: string,
  numberOf: (partition: number, offset: number) => number | undefined,
): Promise<InvariantViolation[]> {
  const expected = new Map<string, Array<{ offset: number; n: number | undefined }>>();
  // Records pruned once no event could need them stand for effects the state still shows.
  const records = new Map(driver.prunedEffectRecords());
  for (const prefix of [stateKeys.effectPrefix(effect), stateKeys.ringPrefix(effect)]) {
    for (const [key, record] of await driver.storedEntries<EffectRecord>(prefix)) records.set(key, record);
  }
  for (const record of records.values()) {
    if (record.discardedAtMs !== undefined) continue;
    const row = `${record.partition}/${record.key}`;
    let list = expected.get(row);
    if (!list) expected.set(row, (list = []));
    list.push({ offset: record.offset, n: numberOf(record.partition, record.offset) });
  }
  const actual = new Map<string, readonly number[]>();
  for (const [key, value] of await driver.storedEntries<AppliedRow>(stateKeys.tablePrefix(effect))) {
    const { partition, rest } = stateKeys.parse(key);
    actual.set(`${partition}/${rest}`, value.applied);
  }
  const found: InvariantViolation[] = [];
  for (const row of new Set([...expected.keys(), ...actual.keys()])) {
    const want = (expected.get(row) ?? []).sort((a, b) => a.offset - b.offset).map((e) => e.n);
    const got = actual.get(row) ?? [];
    if (want.length !== got.length || want.some((n, i) => n !== got[i])) {
      found.push({
        invariant: 'state-mismatch',
        detail: `key ${row}: the state shows events [${got.join(', ')}] applied, the effect records [${want.join(', ')}]`,
      });
    }
  }
  return found;
}
