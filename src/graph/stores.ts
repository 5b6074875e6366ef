import type { GraphNode } from './nodes.js';

/** The stores a node keeps its state in, named after the node so that inserting an operator renames none. */
export function storesOf(node: GraphNode): string[] {
  switch (node.kind) {
    case 'agentStep':
      return [`${node.name}-attempts`];
    case 'park':
      return [node.name];
    case 'applyOnce':
      return [node.name];
    default:
      return [];
  }
}
