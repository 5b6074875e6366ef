import type { GraphNode } from './nodes.js';

/**
 * What a store holds, which fixes the kinds of key it writes: `effects` (an applyOnce's effect
 * records and state table), `attempts` (an agent step's failed attempts), `park` (a park's
 * parked keys, held events and their index), `runs` (an agent step's run journals: the durable
 * steps of its events' runs).
 */
export type StoreKind = 'effects' | 'attempts' | 'park' | 'runs';

/** A named store of a topology. Each has its own changelog topic on Kafka. */
export interface StateStore {
  readonly name: string;
  readonly kind: StoreKind;
}

/** The store of an agent step's attempts. */
export function attemptsStoreOf(step: string): string {
  return `${step}-attempts`;
}

/** The store of an agent step's run journals (`ctx.step`). */
export function runsStoreOf(step: string): string {
  return `${step}-runs`;
}

/** The stores a node keeps its state in, named after the node so that inserting an operator renames none. */
export function stateStoresOf(node: GraphNode): StateStore[] {
  switch (node.kind) {
    case 'agentStep':
      return [
        { name: attemptsStoreOf(node.name), kind: 'attempts' },
        { name: runsStoreOf(node.name), kind: 'runs' },
      ];
    case 'park':
      return [{ name: node.name, kind: 'park' }];
    case 'applyOnce':
      return [{ name: node.name, kind: 'effects' }];
    default:
      return [];
  }
}

/** The names of the stores a node keeps its state in. */
export function storesOf(node: GraphNode): string[] {
  return stateStoresOf(node).map((s) => s.name);
}

/** Every store of a topology's nodes, in chain order. */
export function topologyStores(nodes: readonly GraphNode[]): StateStore[] {
  return nodes.flatMap(stateStoresOf);
}
