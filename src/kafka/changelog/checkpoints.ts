import type { TopicPartition } from '../../ports/log.js';
import type { Store, StoreOp } from '../../ports/store.js';

/**
 * A partition's local checkpoint: the local state of the partition is its changelogs up to these
 * offsets (the next offset to read, per store), plus at most a prefix of what follows them, applied
 * in order by a restore from it that a stop abandoned (a read from the checkpoint applies that
 * prefix again, to the same end). Written when the partition is handed back cleanly, deleted as
 * soon as it is taken over again, and put back only by such an abandoned restore: a checkpoint that
 * is there at take-over proves that no event wrote the partition's local state since.
 */
export interface Checkpoint {
  readonly offsets: Readonly<Record<string, number>>;
  readonly writtenAtMs: number;
  /**
   * The effect records that the rows' last changelog records carry and a redelivery may still
   * need, as `[row key, ring key, offset]` (stored formats 3 and 4): a restore from the checkpoint does
   * not read those records, and the rows' next records must carry them again.
   */
  readonly carried?: ReadonlyArray<readonly [string, string, number]>;
}

// Beside the state keys, in the same LevelDB, and never written to a changelog: the kind
// `checkpoint` is not one of the state's.
const keyOf = (tp: TopicPartition): string => `checkpoint/${encodeURIComponent(tp.topic)}/${tp.partition}`;

export const checkpoints = {
  key: keyOf,
  read: (local: Store, tp: TopicPartition): Checkpoint | undefined => local.get<Checkpoint>(keyOf(tp)),
  put: (tp: TopicPartition, checkpoint: Checkpoint): StoreOp => ({ type: 'put', key: keyOf(tp), value: checkpoint }),
  del: (tp: TopicPartition): StoreOp => ({ type: 'del', key: keyOf(tp) }),
} as const;
