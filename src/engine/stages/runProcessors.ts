import { isThenable } from '../attemptLoop.js';
import type { EventInFlight, Processor, Stopped } from '../processors/processor.js';

/**
 * Stage 5, the graph's processors in chain order. They run inline, and a processor's result is
 * awaited only if it is a promise: an event goes through the whole chain with as few promises as
 * its user functions need. Returns where the event stopped, or `undefined` if it went through.
 */
export function runProcessors(processors: readonly Processor[], unit: EventInFlight, from = 0): Stopped | undefined | Promise<Stopped | undefined> {
  for (let i = from; i < processors.length; i++) {
    const processed = processors[i]!.process(unit);
    if (isThenable(processed)) return processed.then((stopped) => stopped ?? runProcessors(processors, unit, i + 1));
    if (processed) return processed;
  }
  return undefined;
}
