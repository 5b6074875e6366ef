import type { CommitOffset, OutRecord } from '../src/ports/log.js';
import type { StoreOp } from '../src/ports/store.js';

/** An asynchronous port operation as the driver sees it, before it runs it. */
export type IoRequest =
  | { readonly kind: 'batch'; readonly ops: readonly StoreOp[] }
  | { readonly kind: 'scan'; readonly prefix: string }
  | { readonly kind: 'produce'; readonly records: readonly OutRecord[] }
  | { readonly kind: 'commit'; readonly offsets: readonly CommitOffset[] };

/**
 * Named moments to crash at, each the window between two durable steps:
 * - `effect-applied-not-recorded`: the effect ran (an outside call was made) but its batch is not written;
 * - `recorded-not-committed`: the effect and its id are written, the offset is not committed;
 * - `parking`: the park is written to the store, its park record is not yet on the parking topic;
 * - `replaying`: a resolved key has replayed one event, and has more to go or has just been released.
 */
export type CrashPoint = 'effect-applied-not-recorded' | 'recorded-not-committed' | 'parking' | 'replaying';
export const crashPoints: readonly CrashPoint[] = ['effect-applied-not-recorded', 'recorded-not-committed', 'parking', 'replaying'];

/** Whether the driver crashes before running the request, or just after it (its caller never hears back). */
export type CrashPhase = 'before' | 'after';

const puts = (request: IoRequest, prefix: string) => request.kind === 'batch' && request.ops.some((op) => op.type === 'put' && op.key.startsWith(prefix));
const dels = (request: IoRequest, prefix: string) => request.kind === 'batch' && request.ops.some((op) => op.type === 'del' && op.key.startsWith(prefix));

/** The phase at which `request` reaches `point`, if it does. */
export function crashPhase(point: CrashPoint, request: IoRequest): CrashPhase | undefined {
  switch (point) {
    case 'effect-applied-not-recorded':
      return puts(request, 'effect/') ? 'before' : undefined;
    case 'recorded-not-committed':
      return puts(request, 'effect/') ? 'after' : undefined;
    case 'parking':
      return request.kind === 'batch' && request.ops.some((op) => op.type === 'put' && op.key.startsWith('held/') && (op.value as { reason?: string }).reason === 'POISON')
        ? 'after'
        : undefined;
    case 'replaying':
      return dels(request, 'held/') ? 'after' : undefined;
  }
}
