import type { Logger } from 'pino';

/** What the signals stop: `orderly run`'s worker. */
export interface Stoppable {
  stop(options: { graceMs: number }): unknown;
}

/** Where the signals come from (the process) and how the second one exits. */
export interface SignalSource {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  off(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): void;
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

/**
 * SIGINT and SIGTERM for `orderly run`: the first stops the worker (with `graceMs` for the work in
 * flight), a second exits at once with 130. Listening starts before the worker does: the engine
 * consumes and calls the model before the start has ended (the resolutions' consumer is still
 * joining), and a signal with no listener would kill the process there and then, with nothing
 * committed and the group not left. A signal during the start stops the worker as soon as it
 * has started ({@link asked} lets the caller not start it at all if the signal came first).
 */
export class StopSignals {
  private worker: Stoppable | undefined;
  private signals = 0;
  private readonly listener = (signal: NodeJS.Signals): void => this.heard(signal);

  constructor(
    private readonly graceMs: number,
    private readonly logger: Logger,
    private readonly source: SignalSource = process,
  ) {
    for (const signal of SIGNALS) source.on(signal, this.listener);
  }

  /** True once a signal has been heard. */
  get asked(): boolean {
    return this.signals > 0;
  }

  /** The worker has started: a signal heard meanwhile stops it now. */
  started(worker: Stoppable): void {
    this.worker = worker;
    if (this.asked) this.stopWorker();
  }

  /** Stops listening (the worker has ended, or failed to start). */
  close(): void {
    for (const signal of SIGNALS) this.source.off(signal, this.listener);
  }

  private heard(signal: NodeJS.Signals): void {
    this.signals += 1;
    if (this.signals > 1) {
      this.logger.warn({ signal }, 'second signal: exiting without finishing the work in flight');
      this.source.exit(130);
      return;
    }
    if (!this.worker) {
      this.logger.info({ signal }, 'stopping: the worker is still starting; it stops as soon as its start has ended');
      return;
    }
    this.logger.info(
      { signal, graceMs: this.graceMs },
      this.graceMs > 0
        ? `stopping: the work in flight has ${this.graceMs} ms to finish, then what finished is committed and the group left`
        : 'stopping: giving up the work in flight, committing what finished, leaving the group',
    );
    this.stopWorker();
  }

  private stopWorker(): void {
    void this.worker!.stop({ graceMs: this.graceMs });
  }
}
