import type { RespondNode } from '../../graph/nodes.js';
import type { OutRecord } from '../../ports/log.js';
import type { ProcessorFactory } from './processor.js';
import { userFunctionFailed } from './userFunctionFailed.js';

/**
 * The response of an event that went through: the value at this point of the chain (the effect's
 * result), sent with the event's end and stored with its effect record like every output. A value
 * that is not JSON parks the event, as a serializer that throws does.
 */
export const respondProcessor: ProcessorFactory<RespondNode> = (node, ctx, parking) => ({
  process(unit) {
    let records: OutRecord[];
    try {
      records = ctx.jobs.response(unit.event, { state: 'done', result: unit.value });
    } catch (error) {
      return userFunctionFailed(ctx, node, parking, unit.event, error, unit.signal);
    }
    for (const record of records) unit.outputs.push(record);
    return undefined;
  },
});
