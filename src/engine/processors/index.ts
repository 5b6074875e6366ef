import type { ParkNode, ProcessorNode } from '../../graph/nodes.js';
import type { EngineContext } from '../engineContext.js';
import { agentStepProcessor } from './agentStepProcessor.js';
import { applyOnceProcessor } from './applyOnceProcessor.js';
import { circuitsSeeParked, disposeCircuits, fallbackProcessor } from './fallbackProcessor.js';
import type { ParkedKeys } from '../parkedKeys.js';
import { filterProcessor } from './filterProcessor.js';
import { mapValuesProcessor } from './mapValuesProcessor.js';
import type { Parking, Processor, ProcessorFactory, StepGuard, StepGuards } from './processor.js';
import { respondProcessor } from './respondProcessor.js';
import { routeProcessor } from './routeProcessor.js';
import { shadowProcessor } from './shadowProcessor.js';
import { shapingProcessor } from './shapingProcessor.js';
import { sinkProcessor } from './sinkProcessor.js';

/** One processor factory per node kind: a kind without one does not compile. */
const factories: { readonly [K in ProcessorNode['kind']]: ProcessorFactory<Extract<ProcessorNode, { kind: K }>> } = {
  filter: filterProcessor,
  mapValues: mapValuesProcessor,
  keyedSerial: shapingProcessor,
  route: routeProcessor,
  agentStep: agentStepProcessor,
  park: shapingProcessor,
  shadow: shadowProcessor,
  fallback: fallbackProcessor,
  applyOnce: applyOnceProcessor,
  sink: sinkProcessor,
  respond: respondProcessor,
};

/** The processors of a topology's nodes, in chain order, built for each partition of an engine. */
export function buildProcessors(ctx: EngineContext, nodes: readonly ProcessorNode[]): Processor[] {
  const guards = stepGuards();
  return nodes.map((node, index) => (factories[node.kind] as ProcessorFactory<ProcessorNode>)(node, ctx, parkingAt(nodes, index), guards));
}

/** What the processors of an engine keep beyond its partitions (a fallback's circuit and its timer), let go when the engine stops. */
export function disposeProcessors(ctx: EngineContext): void {
  disposeCircuits(ctx);
}

/** What the processors of an engine learn from a partition's parked keys, once they are restored (a fallback's circuit: the failures of its step's poison events). */
export function processorsSeeParked(ctx: EngineContext, parked: ParkedKeys): void {
  circuitsSeeParked(ctx, parked);
}

/** The guards of one set of processors: an agent step's processor is built before its guard's, so it looks its guard up as events come. */
function stepGuards(): StepGuards {
  const byStep = new Map<string, StepGuard>();
  return {
    register(step, guard) {
      if (byStep.has(step)) throw new Error(`agentStep '${step}' has two guards; the DSL allows one shadow or one fallback per step`);
      byStep.set(step, guard);
    },
    of: (step) => byStep.get(step),
  };
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
