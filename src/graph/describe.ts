import type { GraphNode, RateLimit } from './nodes.js';
import { storesOf } from './stores.js';

/** Prints a chain of nodes the way Kafka Streams' `Topology#describe()` prints a sub-topology. */
export function describeTopology(nodes: readonly GraphNode[]): string {
  const lines = ['Topologies:', '   Sub-topology: 0'];
  nodes.forEach((node, i) => {
    lines.push(`    ${header(node)}`);
    const next = nodes[i + 1];
    const previous = nodes[i - 1];
    if (next) lines.push(`      --> ${next.name}`);
    if (previous) lines.push(`      <-- ${previous.name}`);
  });
  return `${lines.join('\n')}\n`;
}

function header(node: GraphNode): string {
  switch (node.kind) {
    case 'source':
      return `Source: ${node.name} (topics: [${node.topic}], dead letters: ${node.deadLetterTopic}${node.effectId ? ', effect ids: declared' : ''})`;
    case 'sink':
      return `Sink: ${node.name} (topic: ${node.topic})`;
    case 'respond':
      return `Sink: ${node.name} (responses: ${node.topic}, status: ${node.statusTopic})`;
    default:
      return `Processor: ${node.name} (${[`stores: [${storesOf(node).join(', ')}]`, ...details(node)].join(', ')})`;
  }
}

function details(node: GraphNode): string[] {
  switch (node.kind) {
    case 'keyedSerial':
      return [`maxInFlight: ${node.maxInFlight}`];
    case 'agentStep':
      return [
        ...(node.limit ? [`limit: ${limitText(node.limit)} per ${node.limit.windowMs} ms`] : []),
        ...(node.timeoutMs !== undefined ? [`timeoutMs: ${node.timeoutMs}`] : []),
      ];
    case 'applyOnce':
      return [
        ...(node.effect.timeoutMs !== undefined ? [`timeoutMs: ${node.effect.timeoutMs}`] : []),
        ...(node.idRetentionMs !== undefined ? [`idRetentionMs: ${node.idRetentionMs}`] : []),
      ];
    case 'shadow':
      return [`step: ${node.step}`, `topic: ${node.topic}`, ...(node.maxWaitMs !== undefined ? [`maxWaitMs: ${node.maxWaitMs}`] : [])];
    case 'fallback':
      return [`step: ${node.step}`, `afterMs: ${node.afterMs}`, `halfOpenAfterMs: ${node.halfOpenAfterMs}`];
    case 'park':
      return [
        `attempts: ${node.attempts}`,
        `retryDelayMs: ${node.retryDelayMs}`,
        `topic: ${node.topic}`,
        ...(node.onExhausted !== 'park' ? [`onExhausted: ${node.onExhausted}`] : []),
      ];
    default:
      return [];
  }
}

function limitText(limit: RateLimit): string {
  const parts = [...(limit.calls !== undefined ? [`${limit.calls} calls`] : []), ...(limit.tokens !== undefined ? [`${limit.tokens} tokens`] : [])];
  return parts.join(', ');
}
