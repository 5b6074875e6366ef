import type { ProcessorNode } from '../../graph/nodes.js';
import type { EngineContext } from '../engineContext.js';
import type { EngineEvent } from '../events.js';
import { failedAttempts, operatorError } from '../operatorFailure.js';
import type { Parking, Stopped } from './processor.js';

/** A filter, mapValues or serializer threw: the event is parked at once (the same input throws again), or the engine stops. */
export function userFunctionFailed(
  ctx: EngineContext,
  node: ProcessorNode,
  parking: Parking | undefined,
  event: EngineEvent,
  error: unknown,
  signal: AbortSignal,
): Stopped {
  const errors = [{ attempt: 1, atMs: ctx.clock.now(), error: operatorError(node, error) }];
  const attempts = failedAttempts(ctx, node, event, errors, signal);
  return { kind: 'parked', attempts, park: parking!.park, step: parking!.step };
}
