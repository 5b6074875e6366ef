import type { FilterNode } from '../../graph/nodes.js';
import { isThenable } from '../attemptLoop.js';
import type { Processed, ProcessorFactory } from './processor.js';
import { userFunctionFailed } from './userFunctionFailed.js';

const FILTERED: Processed = Object.freeze({ kind: 'filtered' });

/** Keeps the events for which the predicate holds; the others finish as FILTERED. */
export const filterProcessor: ProcessorFactory<FilterNode> = (node, ctx, parking) => {
  // Called alone, not as the node's method (see runAgentStep).
  const { predicate } = node;
  return {
    process(unit) {
      let kept: unknown;
      try {
        kept = predicate(unit.value, unit.event.key);
      } catch (error) {
        return userFunctionFailed(ctx, node, parking, unit.event, error, unit.signal);
      }
      if (!isThenable(kept)) return kept ? undefined : FILTERED;
      return Promise.resolve(kept).then(
        (settled) => (settled ? undefined : FILTERED),
        (error: unknown) => userFunctionFailed(ctx, node, parking, unit.event, error, unit.signal),
      );
    },
  };
};
