import type { Topology } from '../graph/topology.js';
import type { Clock } from '../ports/clock.js';
import type { Log } from '../ports/log.js';
import type { Random } from '../ports/random.js';
import type { Store } from '../ports/store.js';
import type { AttemptsRecords } from './attemptsRecords.js';
import type { MetricsRecorder } from './metrics.js';
import type { EngineObserver, Outcome, OutcomeDetails } from './outcomes.js';
import type { EngineEvent } from './events.js';
import type { EventEnd } from './eventEnd.js';
import type { RateGate } from './rateGate.js';
import type { RunJournals } from './runJournals.js';
import type { StateWriter } from './stateWriter.js';
import type { StatusUpdates } from './statusUpdates.js';
import type { TokenPacing } from './tokenPacing.js';

/** What every part of one engine shares: its topology, its ports and its reporting. */
export interface EngineContext {
  readonly topology: Topology;
  readonly clock: Clock;
  readonly random: Random;
  readonly store: Store;
  /** Every read, write and delete of an attempts record. */
  readonly attempts: AttemptsRecords;
  /** Every read, write and delete of a run journal (the durable steps of `ctx.step`). */
  readonly runs: RunJournals;
  readonly log: Log;
  readonly writer: StateWriter;
  /** Each agent step's rate gate, by step name, shared by all partitions. */
  readonly gates: ReadonlyMap<string, RateGate>;
  /** The token pacing of each agent step whose limit declares tokens, by step name, shared by all partitions. */
  readonly tokens: ReadonlyMap<string, TokenPacing>;
  /** How an event's end is written: plain, staged or transactional, chosen when the engine is built. */
  readonly end: EventEnd;
  readonly observer: EngineObserver;
  readonly metrics: MetricsRecorder;
  /** The agent steps' status updates and the responses, for a topology with `.respond()`. */
  readonly jobs: StatusUpdates;
  /** The engine instance's name, told to its agent steps (EngineOptions.instance). */
  readonly instance?: string;
  /**
   * Commits every partition's finished prefix now (coalesced with a commit under way); on a
   * transactional log this commits the open transaction, making its state writes durable.
   */
  commitNow(): Promise<void>;
  /** Counts an outcome and tells the observer, stamped with the clock's time. */
  report(outcome: Outcome, event: Omit<EngineEvent, 'value'>, details?: OutcomeDetails): void;
}
