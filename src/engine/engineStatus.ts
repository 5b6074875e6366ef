/** One source partition as the engine holds it now. */
export interface PartitionStatus {
  readonly topic: string;
  readonly partition: number;
  /** The last offset this engine committed (the next one to read), or undefined before its first commit of the partition. */
  readonly committedOffset: number | undefined;
  /** The partition's high watermark as the log last heard it, or undefined before the log has heard one. */
  readonly highWatermark: number | undefined;
  /** Keys parked now (waiting for a person, or being replayed). */
  readonly parkedKeys: number;
  /** Events held behind the parked events of those keys (the parked events not counted). */
  readonly heldEvents: number;
}

/** The rate budget an agent step spends: the one it declares, or the one the engine learned from 429s. */
export interface BudgetStatus {
  readonly step: string;
  readonly source: 'declared' | 'learned';
  /** Calls per window. */
  readonly calls: number;
  /** The window's length; undefined while a learned budget's window is not known yet (it takes a second window of 429s). */
  readonly windowMs: number | undefined;
}

/** What an engine holds at one moment; read at every metrics scrape, so it is cheap to build. */
export interface EngineStatus {
  /** Events running across all partitions (not yet landed). */
  readonly inFlight: number;
  /** The agent step's budget; absent without an agent step, or before a budget was learned. */
  readonly budgets: readonly BudgetStatus[];
  /** The partitions assigned to this engine. */
  readonly partitions: readonly PartitionStatus[];
}
