import type { ProcessorNode } from '../graph/nodes.js';
import type { AttemptError, AttemptsRecord } from './attemptsRecords.js';
import { CallTimeoutError } from './callTimeout.js';
import type { EngineContext } from './engineContext.js';
import { messageOf, type EngineEvent } from './events.js';

/**
 * A user function (filter, mapValues, an effect, a sink's serializer) threw and the topology has
 * no park() to set the event aside: the engine must stop, committing nothing past the event, which
 * runs again at the next start.
 */
export class OperatorFailedError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'OperatorFailedError';
  }
}

/** How a user function's error reads in a park record and a log line. */
export function operatorError(node: ProcessorNode, error: unknown): string {
  if (error instanceof CallTimeoutError) return error.message;
  return `${node.kind} '${node.name}' threw: ${messageOf(error)}`;
}

/** Where an event is, for an error: `topic/partition@offset (key "k")`. */
function placeOf(event: EngineEvent): string {
  return `${event.topic}/${event.partition}@${event.offset} (key ${JSON.stringify(event.key)})`;
}

/**
 * The error that stops the worker when an event's attempts ran out under `park({ onExhausted:
 * 'fail' })`: it names the operator (in the last error), the event and the fix.
 */
export function exhaustedFailure(event: EngineEvent, attempts: AttemptsRecord): OperatorFailedError {
  const last = attempts.errors[attempts.errors.length - 1]?.error ?? 'its attempts ran out';
  return new OperatorFailedError(
    `${last}, on ${placeOf(event)}, after ${attempts.count} attempt(s); the park() says onExhausted: 'fail', so the worker stops and commits nothing past the event (it runs again at the next start): fix the cause, or choose onExhausted 'park', 'dlq' or 'skip'`,
  );
}

/**
 * What a user function's throw becomes: with a park(), the event is parked with its errors (its
 * key held, other keys go on: a poison event blocks nobody); without one, the engine stops with
 * an error that names the operator, the event and the fix. A throw caused by giving the event up
 * (revocation, stop) stays what it is.
 */
export function failedAttempts(
  ctx: EngineContext,
  node: ProcessorNode,
  event: EngineEvent,
  errors: readonly AttemptError[],
  signal: AbortSignal | undefined,
): AttemptsRecord {
  if (signal?.aborted) throw signal.reason;
  if (!ctx.topology.park) {
    const last = errors[errors.length - 1]?.error ?? `${node.kind} '${node.name}' failed`;
    throw new OperatorFailedError(
      `${last}, on ${placeOf(event)}; this topology has no park(), so the event cannot be set aside and the worker stops (it runs again at the next start): fix the function, or catch the error in it, or add park() after an agentStep`,
    );
  }
  return { count: errors.length, errors };
}
