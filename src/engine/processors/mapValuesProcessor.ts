import type { MapValuesNode } from '../../graph/nodes.js';
import { isThenable } from '../attemptLoop.js';
import type { ProcessorFactory } from './processor.js';
import { userFunctionFailed } from './userFunctionFailed.js';

/** Replaces the value by the mapper's result. */
export const mapValuesProcessor: ProcessorFactory<MapValuesNode> = (node, ctx, parking) => {
  // Called alone, not as the node's method (see runAgentStep).
  const { mapper } = node;
  return {
    process(unit) {
      let mapped: unknown;
      try {
        mapped = mapper(unit.value, unit.event.key);
      } catch (error) {
        return userFunctionFailed(ctx, node, parking, unit.event, error, unit.signal);
      }
      if (!isThenable(mapped)) {
        unit.value = mapped;
        return undefined;
      }
      return Promise.resolve(mapped).then(
        (settled) => {
          unit.value = settled;
          return undefined;
        },
        (error: unknown) => userFunctionFailed(ctx, node, parking, unit.event, error, unit.signal),
      );
    },
  };
};
