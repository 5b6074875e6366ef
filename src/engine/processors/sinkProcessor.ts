import type { SinkNode } from '../../graph/nodes.js';
import { EFFECT_ID_HEADER } from '../outputs.js';
import type { ProcessorFactory } from './processor.js';
import { userFunctionFailed } from './userFunctionFailed.js';

/** Serializes the value into a record for its topic, keyed as the input, sent with the event's end. */
export const sinkProcessor: ProcessorFactory<SinkNode> = (node, ctx, parking) => ({
  process(unit) {
    let value: Uint8Array | null;
    try {
      value = node.value.serialize(unit.value);
    } catch (error) {
      return userFunctionFailed(ctx, node, parking, unit.event, error, unit.signal);
    }
    const { event } = unit;
    unit.outputs.push({ topic: node.topic, key: event.key, value, headers: { [EFFECT_ID_HEADER]: event.effectId } });
    return undefined;
  },
});
