import type { CommitOffset, OutRecord, TopicPartition } from '../src/ports/log.js';
import type { StoreOp } from '../src/ports/store.js';

/** An asynchronous port operation as the driver sees it, before it runs it. */
export type IoRequest =
  /** A store batch; `staged`: it lands (locally, not durable yet) and a `durable` request follows it. */
  | { readonly kind: 'batch'; readonly ops: readonly StoreOp[]; readonly staged?: boolean }
  /** The acknowledgement that makes a landed batch durable (exactly-once: that puts it in the open transaction). */
  | { readonly kind: 'durable'; readonly ops: readonly StoreOp[] }
  | { readonly kind: 'scan'; readonly prefix: string }
  | { readonly kind: 'produce'; readonly records: readonly OutRecord[] }
  /** A commit of offsets; on a transactional log, with the open transaction's records and state writes. */
  | { readonly kind: 'commit'; readonly offsets: readonly CommitOffset[]; readonly transaction?: { readonly holdsWrites: boolean } }
  /** The end of a partition's restore, which the engine awaits before it runs the partition (see DriverOptions.restoreMs). */
  | { readonly kind: 'restore'; readonly partition: TopicPartition };

/**
 * Named moments to crash at, each the window between two durable steps:
 * - `effect-applied-not-recorded`: the effect ran (an outside call was made) but its batch is not written;
 * - `recorded-not-committed`: the effect and its id are written (acknowledged), the offset is not committed;
 * - `parking`: the park is written to the store, its park record is not yet on the parking topic;
 * - `replaying`: a resolved key has replayed one event, and has more to go or has just been released;
 * - `landed-not-durable` (staged store): a batch has landed and was read by what came next, its
 *   acknowledgement has not come (the crash comes instead);
 * - `transaction-open` (exactly-once): a commit is about to commit a transaction that holds
 *   records or state writes (the crash aborts it);
 * - `transaction-committed` (exactly-once): a transaction is committed, the engine has not heard so;
 * - `restoring` (with DriverOptions.restoreMs): a partition's state is being restored, the engine
 *   has not run it yet (while others it owns may run).
 */
export type CrashPoint =
  | 'effect-applied-not-recorded'
  | 'recorded-not-committed'
  | 'parking'
  | 'replaying'
  | 'landed-not-durable'
  | 'transaction-open'
  | 'transaction-committed'
  | 'restoring';
export const crashPoints: readonly CrashPoint[] = [
  'effect-applied-not-recorded',
  'recorded-not-committed',
  'parking',
  'replaying',
  'landed-not-durable',
  'transaction-open',
  'transaction-committed',
  'restoring',
];

/** Whether the driver crashes before running the request, or just after it (its caller never hears back). */
export type CrashPhase = 'before' | 'after';

/** The ops a request writes (a batch as it lands), if it writes any. */
const writes = (request: IoRequest) => (request.kind === 'batch' ? request.ops : []);
/** The ops a request makes written for good: a plain batch, or the acknowledgement of a staged one. */
const acknowledges = (request: IoRequest) => (request.kind === 'durable' || (request.kind === 'batch' && !request.staged) ? request.ops : []);
const puts = (ops: readonly StoreOp[], prefix: string) => ops.some((op) => op.type === 'put' && op.key.startsWith(prefix));
/** An effect record written: under its effect id or at its ring position. */
const recordsEffect = (ops: readonly StoreOp[]) => puts(ops, 'effect/') || puts(ops, 'ring/');
const dels = (ops: readonly StoreOp[], prefix: string) => ops.some((op) => op.type === 'del' && op.key.startsWith(prefix));

/** The phase at which `request` reaches `point`, if it does. */
export function crashPhase(point: CrashPoint, request: IoRequest): CrashPhase | undefined {
  switch (point) {
    case 'effect-applied-not-recorded':
      return recordsEffect(writes(request)) ? 'before' : undefined;
    case 'recorded-not-committed':
      return recordsEffect(acknowledges(request)) ? 'after' : undefined;
    case 'parking':
      return acknowledges(request).some((op) => op.type === 'put' && op.key.startsWith('held/') && (op.value as { reason?: string }).reason === 'POISON')
        ? 'after'
        : undefined;
    case 'replaying':
      return dels(acknowledges(request), 'held/') ? 'after' : undefined;
    case 'landed-not-durable':
      return request.kind === 'durable' ? 'before' : undefined;
    case 'transaction-open':
      return request.kind === 'commit' && request.transaction?.holdsWrites ? 'before' : undefined;
    case 'transaction-committed':
      return request.kind === 'commit' && request.transaction ? 'after' : undefined;
    case 'restoring':
      return request.kind === 'restore' ? 'before' : undefined;
  }
}
