import { EventEmitter } from 'node:events';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { StopSignals, type SignalSource } from '../../../src/cli/stopSignals.js';

/** A process stand-in: signals are emitted by the test, exits recorded. */
class FakeProcess extends EventEmitter implements SignalSource {
  readonly exits: number[] = [];
  exit(code: number): void {
    this.exits.push(code);
  }
  send(signal: NodeJS.Signals): void {
    this.emit(signal, signal);
  }
}

function worker() {
  const stops: Array<{ graceMs: number }> = [];
  return { stops, stop: (options: { graceMs: number }) => stops.push(options) };
}

const logger = pino({ level: 'silent' });

describe('orderly run: SIGINT and SIGTERM', () => {
  it('a signal heard while the worker starts stops it once it has started, not the process there and then', () => {
    const source = new FakeProcess();
    const signals = new StopSignals(0, logger, source);
    // Listening before the start: without a listener Node would end the process at this signal.
    expect(source.listenerCount('SIGTERM')).toBe(1);
    expect(signals.asked).toBe(false);
    source.send('SIGTERM');
    // What runWorker asks before it joins the group: a worker not started yet is not started at all.
    expect(signals.asked).toBe(true);
    const started = worker();
    signals.started(started);
    expect(started.stops).toEqual([{ graceMs: 0 }]);
    expect(source.exits).toEqual([]);
  });

  it('a signal after the start stops the worker with its grace; a second exits at once with 130', () => {
    const source = new FakeProcess();
    const signals = new StopSignals(5_000, logger, source);
    const started = worker();
    signals.started(started);
    expect(started.stops).toEqual([]);
    source.send('SIGINT');
    expect(started.stops).toEqual([{ graceMs: 5_000 }]);
    source.send('SIGTERM');
    expect(source.exits).toEqual([130]);
    expect(started.stops).toHaveLength(1);
  });

  it('stops listening when closed', () => {
    const source = new FakeProcess();
    const signals = new StopSignals(0, logger, source);
    signals.close();
    expect(source.listenerCount('SIGINT') + source.listenerCount('SIGTERM')).toBe(0);
  });
});
