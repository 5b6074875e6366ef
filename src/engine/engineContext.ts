import type { Topology } from '../graph/topology.js';
import type { Clock } from '../ports/clock.js';
import type { Log } from '../ports/log.js';
import type { Random } from '../ports/random.js';
import type { Store } from '../ports/store.js';
import type { AttemptsIndexedStore } from './attemptsIndex.js';
import type { MetricsRecorder } from './metrics.js';
import type { EngineObserver, Outcome, OutcomeDetails } from './outcomes.js';
import type { EngineEvent } from './events.js';
import type { RateGate } from './rateGate.js';
import type { StateWriter } from './stateWriter.js';
import type { StatusUpdates } from './statusUpdates.js';
import type { TokenPacing } from './tokenPacing.js';

/** What every part of one engine shares: its topology, its ports and its reporting. */
export interface EngineContext {
  readonly topology: Topology;
  readonly clock: Clock;
  readonly random: Random;
  readonly store: Store;
  /** The same store; it loads a partition's attempts records when the partition is assigned. */
  readonly attempts: AttemptsIndexedStore;
  readonly log: Log;
  readonly writer: StateWriter;
  /** The agent step's rate gate, shared by all partitions. */
  readonly gate: RateGate | undefined;
  /** The agent step's token pacing, when its limit declares tokens. */
  readonly tokens: TokenPacing | undefined;
  readonly observer: EngineObserver;
  readonly metrics: MetricsRecorder;
  /** The agent step's status updates and the responses, for a topology with `.respond()`. */
  readonly jobs: StatusUpdates;
  /**
   * Runs the end of an event (its state write and the records it sends) as one unit: on an
   * exactly-once log, one transaction holds all of it.
   */
  atomically<T>(work: () => Promise<T>): Promise<T>;
  /** Counts an outcome and tells the observer, stamped with the clock's time. */
  report(outcome: Outcome, event: Omit<EngineEvent, 'value'>, details?: OutcomeDetails): void;
}
