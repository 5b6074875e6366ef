import { Outcome } from './outcomes.js';

/** Counters of one engine, since it started. */
export interface EngineMetrics {
  readonly outcomes: Readonly<Record<Outcome, number>>;
  /** Calls of the agent step issued (each answered, refused or failed). */
  readonly modelCalls: number;
  readonly commits: number;
  /** Events received from the log, counting redeliveries. */
  readonly received: number;
}

export class MetricsRecorder {
  private readonly outcomes = Object.fromEntries(Object.values(Outcome).map((o) => [o, 0])) as Record<Outcome, number>;
  private modelCalls = 0;
  private commits = 0;
  private received = 0;

  outcome(outcome: Outcome): void {
    this.outcomes[outcome] += 1;
  }

  modelCall(): void {
    this.modelCalls += 1;
  }

  commit(): void {
    this.commits += 1;
  }

  receive(count: number): void {
    this.received += count;
  }

  snapshot(): EngineMetrics {
    return { outcomes: { ...this.outcomes }, modelCalls: this.modelCalls, commits: this.commits, received: this.received };
  }
}
