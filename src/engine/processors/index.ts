import type { ParkNode, ProcessorNode } from '../../graph/nodes.js';
import type { EngineContext } from '../engineContext.js';
import { agentStepProcessor } from './agentStepProcessor.js';
import { applyOnceProcessor } from './applyOnceProcessor.js';
import { filterProcessor } from './filterProcessor.js';
import { mapValuesProcessor } from './mapValuesProcessor.js';
import type { Parking, Processor, ProcessorFactory } from './processor.js';
import { respondProcessor } from './respondProcessor.js';
import { shapingProcessor } from './shapingProcessor.js';
import { sinkProcessor } from './sinkProcessor.js';

/** One processor factory per node kind: a kind without one does not compile. */
const factories: { readonly [K in ProcessorNode['kind']]: ProcessorFactory<Extract<ProcessorNode, { kind: K }>> } = {
  filter: filterProcessor,
  mapValues: mapValuesProcessor,
  keyedSerial: shapingProcessor,
  agentStep: agentStepProcessor,
  park: shapingProcessor,
  applyOnce: applyOnceProcessor,
  sink: sinkProcessor,
  respond: respondProcessor,
};

/** The processors of a topology's nodes, in chain order, built once per engine. */
export function buildProcessors(ctx: EngineContext, nodes: readonly ProcessorNode[]): Processor[] {
  return nodes.map((node, index) => (factories[node.kind] as ProcessorFactory<ProcessorNode>)(node, ctx, parkingAt(nodes, index)));
}

/**
 * Where an event that fails at the node at `index` goes: the park of the agent step nearest before
 * it (an agent step's own park follows it), else the topology's first park; none without a park.
 */
export function parkingAt(nodes: readonly ProcessorNode[], index: number): Parking | undefined {
  const parkAfter = (i: number): Parking | undefined => {
    const park = nodes[i + 1];
    return park?.kind === 'park' ? { park: park as ParkNode, step: nodes[i]!.name } : undefined;
  };
  for (let i = index; i >= 0; i--) if (nodes[i]!.kind === 'agentStep') return parkAfter(i);
  const first = nodes.findIndex((n) => n.kind === 'agentStep');
  return first >= 0 ? parkAfter(first) : undefined;
}
