import type { AgentStepNode, ApplyOnceNode, GraphNode, ParkNode, ProcessorNode, RespondNode, SourceNode } from './nodes.js';
import { describeTopology } from './describe.js';
import { topologyToMermaid } from './mermaid.js';

/**
 * A validated chain of operators from one source topic, built by {@link stream}. It holds
 * declarations only, no run-time state: every engine (every restart in the test driver) that runs
 * it starts from fresh operator state and the store.
 */
export class Topology {
  /** Events in flight per partition. 1 when the chain has no keyedSerial. */
  readonly maxInFlight: number;
  /** The first agent step. */
  readonly agentStep: AgentStepNode | undefined;
  /** Every agent step, in chain order. */
  readonly agentSteps: readonly AgentStepNode[];
  /** The first park: its store holds the topology's parked keys, whichever step parked them. */
  readonly park: ParkNode | undefined;
  readonly applyOnce: ApplyOnceNode | undefined;
  /** Where responses and status updates go, when the chain declares `.respond()`. */
  readonly respond: RespondNode | undefined;
  /** Every topic the topology writes: sinks, then the parking and dead-letter topics, then the response and status topics, then the shadow topics. */
  readonly outputTopics: readonly string[];

  /** @internal */
  constructor(
    readonly source: SourceNode,
    readonly processors: readonly ProcessorNode[],
  ) {
    // Derived once: the engine reads these for every event.
    this.maxInFlight = this.find('keyedSerial')?.maxInFlight ?? 1;
    this.agentSteps = processors.filter((n): n is AgentStepNode => n.kind === 'agentStep');
    this.agentStep = this.agentSteps[0];
    this.park = this.find('park');
    this.applyOnce = this.find('applyOnce');
    this.respond = this.find('respond');
    const sinks = processors.flatMap((n) => (n.kind === 'sink' ? [n.topic] : []));
    const parks = processors.flatMap((n) => (n.kind === 'park' ? [n.topic] : []));
    const jobs = this.respond ? [this.respond.topic, this.respond.statusTopic] : [];
    const shadows = processors.flatMap((n) => (n.kind === 'shadow' ? [n.topic] : []));
    this.outputTopics = [...new Set([...sinks, ...parks, source.deadLetterTopic, ...jobs, ...shadows])];
  }

  /** The park right after an agent step: its attempts, delay, disposition and parking topic. */
  parkAfter(step: string): ParkNode | undefined {
    const at = this.processors.findIndex((n) => n.kind === 'agentStep' && n.name === step);
    const next = at < 0 ? undefined : this.processors[at + 1];
    return next?.kind === 'park' ? next : undefined;
  }

  /** Every node, the source first, in chain order. */
  get nodes(): readonly GraphNode[] {
    return [this.source, ...this.processors];
  }

  /** The operator graph in Kafka Streams' `describe()` form: source, processors with their stores, sinks. */
  describe(): string {
    return describeTopology(this.nodes);
  }

  /** The operator graph as a Mermaid flowchart, stores drawn as cylinders. */
  toMermaid(): string {
    return topologyToMermaid(this.nodes);
  }

  private find<K extends ProcessorNode['kind']>(kind: K): Extract<ProcessorNode, { kind: K }> | undefined {
    return this.processors.find((n): n is Extract<ProcessorNode, { kind: K }> => n.kind === kind);
  }
}
