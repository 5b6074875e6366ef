import type { AgentStepNode, DecidedBy, ParkNode, ProcessorNode } from '../../graph/nodes.js';
import type { OutRecord } from '../../ports/log.js';
import type { StoreOp } from '../../ports/store.js';
import type { Tried, Try } from '../tries.js';
import type { AttemptsRecord } from '../attemptsRecords.js';
import type { EngineContext } from '../engineContext.js';
import type { EngineEvent } from '../events.js';

/** One event on its way through the processors: its value, and what its end will write and send. */
export interface EventInFlight {
  readonly event: EngineEvent;
  /** The value the next processor takes. */
  value: unknown;
  /** State to write with the event's end, in one atomic batch with its effect record. */
  readonly ops: StoreOp[];
  /** Records to send once the state is written. */
  readonly outputs: OutRecord[];
  /** The decisions of the agent steps so far, by step name; a replay brings those made before it parked. */
  decisions: Readonly<Record<string, unknown>>;
  /** Who made each of those decisions, by step name. */
  decidedBy: Readonly<Record<string, DecidedBy>>;
  /** Aborted when the engine gives the event up (revoked, lost, stopping): it then ends unfinished. */
  readonly signal: AbortSignal;
}

/** Where the processors stopped an event before its end: a filter dropped it, or a processor's attempts ran out. */
export type Stopped =
  | { readonly kind: 'filtered' }
  | {
      readonly kind: 'parked';
      readonly attempts: AttemptsRecord;
      /** The park whose disposition ends it (none: the topology has none, and the engine stops first). */
      readonly park: ParkNode;
      /** The agent step that park follows: the one a person's decision stands in for. */
      readonly step: string;
    };

/** What a processor did: `undefined` to go on to the next one, or where the event stopped. */
export type Processed = Stopped | undefined;

/**
 * The run-time side of one node of the graph (as Kafka Streams' Processor is of its ProcessorNode).
 * It works on the event in flight in place and returns at once when it can: a promise only when a
 * user function returned one.
 */
export interface Processor {
  process(event: EventInFlight): Processed | Promise<Processed>;
}

/** The park that takes an event a node fails on, and the step it follows. */
export interface Parking {
  readonly park: ParkNode;
  readonly step: string;
}

/**
 * Builds a node's processor for one partition of an engine; `parking`: where an event it fails on
 * goes, if anywhere; `guards`: where an operator that takes part in an agent step's decision (a
 * shadow, a fallback) registers, and where the step finds it.
 */
export type ProcessorFactory<N extends ProcessorNode> = (node: N, ctx: EngineContext, parking: Parking | undefined, guards: StepGuards) => Processor;

/** An agent step as the operator that guards it (a shadow, a fallback) drives it. */
export interface GuardedStep {
  readonly node: AgentStepNode;
  /**
   * The step's attempts for the event, through its rate gate, as without a guard; `watch` hears
   * how each attempt ended. Its calls and waits end when `unit.signal` is aborted.
   */
  attempts(unit: EventInFlight, watch?: (tried: Try<unknown>) => void): Tried<unknown> | Promise<Tried<unknown>>;
  /** The event's attempts at the step stored so far (before a restart, or a move of its partition). */
  stored(unit: EventInFlight): AttemptsRecord;
  /** Passes `decision` on as the step's, made by `by`; the event's attempts record at the step, if any, goes with its end. */
  take(unit: EventInFlight, decision: unknown, by: DecidedBy): undefined;
  /** The step's attempts ran out: where the event stops (the step's park). */
  exhausted(attempts: AttemptsRecord): Stopped;
}

/**
 * An operator after an agent step that takes part in how the step decides (a shadow, a fallback):
 * the step hands it each event it has no decision for yet.
 */
export interface StepGuard {
  decide(step: GuardedStep, unit: EventInFlight): Processed | Promise<Processed>;
}

/** Where guards register, by the step they guard; the step looks its guard up as events come. */
export interface StepGuards {
  /** Registers the guard of `step` (one at most: the DSL refuses a second). */
  register(step: string, guard: StepGuard): void;
  of(step: string): StepGuard | undefined;
}
