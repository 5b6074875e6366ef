import type { Dispute } from '../../testkit/scenarios/disputes.js';

/** Event `i` of the benchmark's input: a dispute of account `i % keys`, so every key gets events in turn. */
export function benchEvent(i: number, keys: number): Dispute {
  const account = `acct-${String(i % keys).padStart(5, '0')}`;
  return { disputeId: `d-${i}`, account, amount: 10 + ((i * 37) % 120), reason: i % 7 === 0 ? 'fraud' : 'not-received' };
}

/** The end offset (next offset to write) of each partition of a topic: what "all consumed" means. */
export type EndOffsets = readonly number[];

/** Events in all partitions up to the end offsets (topics are fresh, so offsets start at 0). */
export function totalOf(ends: EndOffsets): number {
  return ends.reduce((sum, end) => sum + end, 0);
}
