import type { ParkNode, ProcessorNode } from '../../graph/nodes.js';
import type { OutRecord } from '../../ports/log.js';
import type { StoreOp } from '../../ports/store.js';
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

/** Builds a node's processor for one engine; `parking`: where an event it fails on goes, if anywhere. */
export type ProcessorFactory<N extends ProcessorNode> = (node: N, ctx: EngineContext, parking: Parking | undefined) => Processor;
