import type { GraphNode } from './nodes.js';
import { storesOf } from './stores.js';

/** Draws a chain of nodes as a Mermaid flowchart: operators as boxes, topics as stadiums, stores as cylinders. */
export function topologyToMermaid(nodes: readonly GraphNode[]): string {
  const lines = ['flowchart LR'];
  const id = (i: number) => `n${i}`;
  nodes.forEach((node, i) => {
    lines.push(`  ${id(i)}["${node.kind}: ${node.name}"]`);
    if (node.kind === 'source') lines.push(`  ${id(i)}in(["${node.topic}"]) --> ${id(i)}`);
    if (i > 0) lines.push(`  ${id(i - 1)} --> ${id(i)}`);
    for (const [j, store] of storesOf(node).entries()) lines.push(`  ${id(i)}s${j}[("${store}")] -.- ${id(i)}`);
    for (const [j, topic] of topicsOf(node).entries()) lines.push(`  ${id(i)} -.-> ${id(i)}t${j}(["${topic}"])`);
  });
  return `${lines.join('\n')}\n`;
}

function topicsOf(node: GraphNode): string[] {
  switch (node.kind) {
    case 'source':
      return [node.deadLetterTopic];
    case 'park':
    case 'shadow':
    case 'sink':
      return [node.topic];
    case 'respond':
      return [node.topic, node.statusTopic];
    default:
      return [];
  }
}
