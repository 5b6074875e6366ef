import type { GraphNode } from '../graph/nodes.js';
import { TopologyError } from './topologyError.js';

type Pass = (nodes: readonly GraphNode[]) => void;

/**
 * Refuses a chain that cannot run correctly. Each pass checks one rule and throws a
 * {@link TopologyError} that names the operator, the rule and the fix.
 */
export function validateTopology(nodes: readonly GraphNode[]): void {
  for (const pass of passes) pass(nodes);
}

const uniqueNames: Pass = (nodes) => {
  const seen = new Set<string>();
  for (const node of nodes) {
    if (seen.has(node.name)) {
      throw new TopologyError(
        node.name,
        `${node.kind} '${node.name}': two operators are named '${node.name}'; names key state and metrics, so give one of them another name`,
      );
    }
    seen.add(node.name);
  }
};

const oneOfEachStatefulKind: Pass = (nodes) => {
  for (const kind of ['keyedSerial', 'agentStep', 'park', 'applyOnce'] as const) {
    const found = nodes.filter((n) => n.kind === kind);
    if (found.length > 1) {
      throw new TopologyError(
        found[1]!.name,
        `${kind} '${found[1]!.name}': a topology has at most one ${kind} in this version; ` +
          (kind === 'agentStep' ? 'make one decide function that calls both models, or chain two topologies through a topic' : `remove '${found[1]!.name}'`),
      );
    }
  }
};

const agentStepNeedsKeyedSerial: Pass = (nodes) => {
  const step = nodes.findIndex((n) => n.kind === 'agentStep');
  if (step >= 0 && !nodes.slice(0, step).some((n) => n.kind === 'keyedSerial')) {
    const name = nodes[step]!.name;
    throw new TopologyError(
      name,
      `agentStep '${name}' needs keyedSerial() upstream: two events of one key could run at once; add .keyedSerial({ maxInFlight: N }) before it`,
    );
  }
};

const parkFollowsAStep: Pass = (nodes) => {
  const park = nodes.findIndex((n) => n.kind === 'park');
  if (park < 0) return;
  const before = nodes[park - 1]!;
  if (before.kind !== 'agentStep') {
    const name = nodes[park]!.name;
    const why = nodes.slice(0, park).some((n) => n.kind === 'agentStep')
      ? `it must follow its agentStep directly, but follows ${before.kind} '${before.name}'`
      : 'no step before it can fail';
    throw new TopologyError(name, `park '${name}': ${why}; put .park() right after .agentStep()`);
  }
};

const agentStepIsParkedAndApplied: Pass = (nodes) => {
  const step = nodes.findIndex((n) => n.kind === 'agentStep');
  if (step < 0) return;
  const name = nodes[step]!.name;
  if (nodes[step + 1]?.kind !== 'park') {
    throw new TopologyError(
      name,
      `agentStep '${name}' has no park() right after it: a decision that keeps failing would have nowhere to go; add .park({ attempts: 3 })`,
    );
  }
  if (!nodes.slice(step).some((n) => n.kind === 'applyOnce')) {
    throw new TopologyError(
      name,
      `agentStep '${name}': its decision is never applied; add .applyOnce(effect) after its park(), so each decision takes effect once`,
    );
  }
};

const passes: readonly Pass[] = [
  uniqueNames,
  oneOfEachStatefulKind,
  agentStepNeedsKeyedSerial,
  parkFollowsAStep,
  agentStepIsParkedAndApplied,
];
