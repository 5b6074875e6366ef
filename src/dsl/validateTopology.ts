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
  const seen = new Map<string, number>();
  nodes.forEach((node, i) => {
    const first = seen.get(node.name);
    if (first === undefined) {
      seen.set(node.name, i);
      return;
    }
    const fixes = [...new Set([renaming(nodes, first), renaming(nodes, i)])].filter((fix) => fix !== undefined);
    const other = nodes[first]!.kind === node.kind && node.kind !== 'park' ? `an earlier ${node.kind}` : operatorOf(nodes, first);
    throw new TopologyError(
      node.name,
      `${operatorOf(nodes, i)}: two operators are named '${node.name}': this one and ${other}${defaultNote(nodes, first)}; ` +
        `names key state and metrics, so give one of them another name (${fixes.join('; ')})`,
    );
  });
};

/** The operator at `i`, in words: its kind and name, a park by its step. */
function operatorOf(nodes: readonly GraphNode[], i: number): string {
  const node = nodes[i]!;
  switch (node.kind) {
    case 'source':
      return `the source of topic '${node.topic}'`;
    case 'park': {
      const step = stepBefore(nodes, i);
      return step ? `the park of agentStep '${step}'` : `park '${node.name}'`;
    }
    default:
      return `${node.kind} '${node.name}'`;
  }
}

/** ` (its default name, ...)` when the operator at `i` has the name the DSL gives it when none is given. */
function defaultNote(nodes: readonly GraphNode[], i: number): string {
  const node = nodes[i]!;
  const topic = nodes[0]?.kind === 'source' ? nodes[0].topic : undefined;
  const ordinal = nodes.slice(0, i + 1).filter((n) => n.kind === node.kind).length;
  const defaults: Partial<Record<GraphNode['kind'], string>> = {
    source: `${topic}-source`,
    filter: `filter-${ordinal}`,
    mapValues: `map-values-${ordinal}`,
    keyedSerial: `${topic}-keyed-serial`,
    park: `${stepBefore(nodes, i) ?? topic}-park`,
    sink: node.kind === 'sink' ? `${node.topic}-sink` : undefined,
    respond: node.kind === 'respond' ? `${node.topic}-respond` : undefined,
  };
  const pattern: Partial<Record<GraphNode['kind'], string>> = {
    source: '<topic>-source',
    filter: 'filter-<n>',
    mapValues: 'map-values-<n>',
    keyedSerial: '<topic>-keyed-serial',
    park: stepBefore(nodes, i) ? '<step>-park' : '<topic>-park',
    sink: '<topic>-sink',
    respond: '<topic>-respond',
  };
  return defaults[node.kind] === node.name ? ` (its default name, ${pattern[node.kind]})` : '';
}

/** How to give the operator at `i` another name (none for the source: it is named after its topic). */
function renaming(nodes: readonly GraphNode[], i: number): string | undefined {
  const node = nodes[i]!;
  switch (node.kind) {
    case 'source':
      return undefined;
    case 'filter':
      return ".filter(fn, { name: '...' }) names the filter";
    case 'mapValues':
      return ".mapValues(fn, { name: '...' }) names the mapValues";
    case 'keyedSerial':
      return ".keyedSerial({ name: '...' }) names the keyedSerial";
    case 'park':
      return ".park({ ..., name: '...' }) names the park";
    case 'applyOnce':
      return "effect('...', apply) or .applyOnce(effect, { name: '...' }) names the applyOnce";
    case 'sink':
      return `.to('${node.topic}', { name: '...' }) names the sink`;
    case 'respond':
      return `.respond('${node.topic}', { name: '...' }) names the respond`;
    default:
      return `.${node.kind}('...', ...) names the ${node.kind} (its first argument)`;
  }
}

/** The agentStep whose park the park at `i` is (the last agentStep before it), as park() finds it. */
function stepBefore(nodes: readonly GraphNode[], i: number): string | undefined {
  return nodes.slice(0, i).findLast((n) => n.kind === 'agentStep')?.name;
}

const oneOfEachStatefulKind: Pass = (nodes) => {
  for (const kind of ['keyedSerial', 'applyOnce', 'respond'] as const) {
    const found = nodes.filter((n) => n.kind === kind);
    if (found.length > 1) {
      throw new TopologyError(
        found[1]!.name,
        `${kind} '${found[1]!.name}': a topology has at most one ${kind} in this version; remove one of the ${found.length}`,
      );
    }
  }
};

/** Each agent step has one park: two in a row would leave the second with no step of its own. */
const oneParkPerStep: Pass = (nodes) => {
  nodes.forEach((node, i) => {
    const before = nodes[i - 1];
    if (node.kind === 'park' && before?.kind === 'park') {
      const step = nodes[i - 2];
      const owner = step?.kind === 'agentStep' ? `agentStep '${step.name}' already has its park` : 'a park follows a park';
      throw new TopologyError(node.name, `park '${node.name}': ${owner}; remove one of the 2`);
    }
  });
};

/** A topic the topology reads or writes, and the operator that does. */
interface TopicUse {
  readonly topic: string;
  readonly role: 'source' | 'dead-letter' | 'park' | 'output' | 'response' | 'status' | 'shadow';
  readonly node: GraphNode;
}

function topicUses(nodes: readonly GraphNode[]): TopicUse[] {
  return nodes.flatMap((node): TopicUse[] => {
    switch (node.kind) {
      case 'source':
        return [
          { topic: node.topic, role: 'source', node },
          { topic: node.deadLetterTopic, role: 'dead-letter', node },
        ];
      case 'park':
        return [{ topic: node.topic, role: 'park', node }];
      case 'sink':
        return [{ topic: node.topic, role: 'output', node }];
      case 'shadow':
        return [{ topic: node.topic, role: 'shadow', node }];
      case 'respond':
        return [
          { topic: node.topic, role: 'response', node },
          { topic: node.statusTopic, role: 'status', node },
        ];
      default:
        return [];
    }
  });
}

/** Names the operator that reads or writes `use`, and the option that picks its topic. */
function writer(use: TopicUse): { operator: string; option: string } {
  const { node } = use;
  if (node.kind === 'source') return { operator: `stream '${node.topic}'`, option: "another stream(topic, { deadLetterTopic: '...' })" };
  if (node.kind === 'park') return { operator: `park '${node.name}'`, option: "another park({ topic: '...' })" };
  if (node.kind === 'shadow') return { operator: `shadow '${node.name}'`, option: "another shadow(name, handler, { topic: '...' })" };
  if (node.kind === 'respond') {
    return use.role === 'status'
      ? { operator: `respond '${node.name}'`, option: "another respond(topic, { statusTopic: '...' })" }
      : { operator: `respond '${node.name}'`, option: 'respond() another topic' };
  }
  return { operator: `to '${node.name}'`, option: 'to() another topic' };
}

/**
 * The source, dead-letter, park and output topics all differ: a topology that writes its source
 * reads its own records again (one bad payload dead-lettered forever), and two kinds of record in
 * one topic cannot be told apart by their readers.
 */
const distinctTopics: Pass = (nodes) => {
  const seen = new Map<string, TopicUse>();
  for (const use of topicUses(nodes)) {
    const first = seen.get(use.topic);
    if (!first) {
      seen.set(use.topic, use);
      continue;
    }
    const { operator, option } = writer(use);
    if (first.role === 'source') {
      throw new TopologyError(
        use.node.name,
        `${operator}: its ${use.role} topic is the source topic '${use.topic}': every record it writes would be read again, and written again, forever; give ${option}`,
      );
    }
    // Several agent steps may share a parking topic, or a shadow topic: each record names its step.
    if (first.role === 'park' && use.role === 'park') continue;
    if (first.role === 'shadow' && use.role === 'shadow') continue;
    if (first.role === 'output' && use.role === 'output') {
      throw new TopologyError(
        use.node.name,
        `${operator}: the topology already writes its outputs to '${use.topic}' (${first.node.name}); remove one of the two to('${use.topic}')`,
      );
    }
    throw new TopologyError(
      use.node.name,
      `${operator}: its ${use.role} topic '${use.topic}' is also the ${first.role} topic of ${writer(first).operator}: readers could not tell the records apart; give ${option}`,
    );
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
  nodes.forEach((node, park) => {
    if (node.kind !== 'park') return;
    const before = nodes[park - 1]!;
    if (before.kind === 'agentStep') return;
    const why = nodes.slice(0, park).some((n) => n.kind === 'agentStep')
      ? `it must follow its agentStep directly, but follows ${before.kind} '${before.name}'`
      : 'no step before it can fail';
    throw new TopologyError(node.name, `park '${node.name}': ${why}; put .park() right after .agentStep()`);
  });
};

/** Every agent step has its park right after it, and its decision reaches the effect. */
const agentStepIsParkedAndApplied: Pass = (nodes) => {
  nodes.forEach((node, step) => {
    if (node.kind !== 'agentStep') return;
    const name = node.name;
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
  });
};

const respondFollowsAStep: Pass = (nodes) => {
  const respond = nodes.findIndex((n) => n.kind === 'respond');
  if (respond < 0) return;
  if (!nodes.slice(0, respond).some((n) => n.kind === 'agentStep')) {
    const name = nodes[respond]!.name;
    throw new TopologyError(
      name,
      `respond '${name}': no agentStep before it, so there is no job to answer; put .respond(topic) after .agentStep(...).park(...).applyOnce(...)`,
    );
  }
};

/** A route decides for the agent step right after it (after the other routes in a row). */
const routeBeforeAStep: Pass = (nodes) => {
  nodes.forEach((node, i) => {
    if (node.kind !== 'route') return;
    const next = nodes.slice(i + 1).find((n) => n.kind !== 'route');
    if (next?.kind === 'agentStep') return;
    const why = next
      ? `it must come right before the agentStep it decides for, but is followed by ${next.kind} '${next.name}'`
      : 'no agentStep follows it, so its decisions would go nowhere';
    throw new TopologyError(node.name, `route '${node.name}': ${why}; put .route(name, rule) right before .agentStep(name, decide)`);
  });
};

// Duplicates and topics first: their errors say what to remove or change, where a clash of the
// names they default to would only say "rename".
const passes: readonly Pass[] = [
  oneOfEachStatefulKind,
  oneParkPerStep,
  distinctTopics,
  uniqueNames,
  agentStepNeedsKeyedSerial,
  parkFollowsAStep,
  agentStepIsParkedAndApplied,
  respondFollowsAStep,
  routeBeforeAStep,
];
