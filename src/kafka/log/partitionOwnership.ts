import { partitionId, type TopicPartition } from '../../ports/log.js';

/**
 * Where this consumer stands with a partition. `assigning`: the engine restores it, no record is
 * delivered yet; `owned`: records flow; `revoking`: the engine finishes and commits it, new
 * records are dropped (the next owner reads them from the committed offset); `lost`: taken away
 * without a revocation (this worker was fenced), so its offsets can no longer be committed.
 */
export type Ownership = 'assigning' | 'owned' | 'revoking' | 'lost';

/**
 * The moves a partition's ownership may make; any other is a bug in KafkaLog and throws. A
 * partition starts `assigning` when librdkafka assigns it, and leaves the table (it is forgotten)
 * once a revocation or a loss has been handed to the engine.
 * - assigning → owned: the engine has restored it.
 * - owned → assigning: an aborted transaction resets it (exactly-once), and it is restored again.
 * - assigning | owned → revoking: the group takes it back; → lost: taken without a revocation.
 * - revoking → lost: the worker is fenced while the engine finishes the revocation.
 */
export const ownershipTransitions: Readonly<Record<Ownership, readonly Ownership[]>> = {
  assigning: ['owned', 'revoking', 'lost'],
  owned: ['assigning', 'revoking', 'lost'],
  revoking: ['lost'],
  lost: [],
};

/** A partition's ownership was asked to make a move that {@link ownershipTransitions} does not allow. */
export class OwnershipTransitionError extends Error {
  constructor(
    readonly tp: TopicPartition,
    readonly from: Ownership,
    readonly to: Ownership,
    cause: string,
  ) {
    super(
      `KafkaLog: partition ${partitionId(tp)} cannot go from ${from} to ${to} (${cause}); ` +
        `allowed from ${from}: ${ownershipTransitions[from].join(', ') || 'none'}. This is a bug in orderly: report it with the worker's log`,
    );
    this.name = 'OwnershipTransitionError';
  }
}

/** Checks a move of the partition's ownership; returns the new ownership, or throws {@link OwnershipTransitionError}. */
export function transition(tp: TopicPartition, from: Ownership, to: Ownership, cause: string): Ownership {
  if (!ownershipTransitions[from].includes(to)) throw new OwnershipTransitionError(tp, from, to, cause);
  return to;
}
