// How a worker stops: a stop that hangs says which part it waits for, every SLOW_STOP_MS, until it ends.
import type { Logger } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Engine } from '../../../src/engine/engine.js';
import type { Store } from '../../../src/ports/store.js';
import type { RateLimitWatch } from '../../../src/kafka/rateLimitWarnings.js';
import { SLOW_STOP_MS, WorkerStop } from '../../../src/kafka/workerStop.js';

/** A logger that keeps its warnings and infos. */
function recordingLogger() {
  const lines: Array<{ level: 'warn' | 'info'; fields: Record<string, unknown>; msg: string }> = [];
  const logger = {
    warn: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'warn', fields, msg }),
    info: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'info', fields, msg }),
  } as unknown as Logger;
  return { logger, lines };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('WorkerStop', () => {
  it('logs every SLOW_STOP_MS, naming the part it waits for, while a stop runs (a warning past the grace); then no more', async () => {
    vi.useFakeTimers();
    const { logger, lines } = recordingLogger();
    let release!: () => void;
    const engine = {
      inFlight: 3,
      stop: () => new Promise<void>((resolve) => (release = resolve)),
      metrics: () => ({}),
    } as unknown as Engine;
    let closes = 0;
    const store = { close: async () => void (closes += 1) } as unknown as Store;
    const stopper = new WorkerStop(logger);
    stopper.running({ rateLimits: { stop: () => undefined } as unknown as RateLimitWatch, engine, store });

    const stopped = stopper.stopAsked({ graceMs: 15_000 });
    await vi.advanceTimersByTimeAsync(SLOW_STOP_MS - 1);
    expect(lines).toEqual([]);
    await vi.advanceTimersByTimeAsync(1 + SLOW_STOP_MS);
    // Inside the grace an info line, past it a warning; both name the part.
    expect(lines.map((l) => [l.level, l.fields.part])).toEqual([
      ['info', 'engine'],
      ['warn', 'engine'],
    ]);
    expect(lines[0]!.fields).toMatchObject({ waitedMs: SLOW_STOP_MS, graceMs: 15_000, inFlight: 3 });
    expect(lines[0]!.msg).toMatch(/^stop still running after 10 s \(within its grace of 15 s\): it waits for the engine: its work in flight/);
    expect(lines[1]!.msg).toMatch(/^stop still running after 20 s: it waits for the engine: its work in flight/);

    release();
    await stopped;
    expect(closes).toBe(1);
    expect(lines.at(-1)).toMatchObject({ level: 'info', msg: 'worker stopped' });
    await vi.advanceTimersByTimeAsync(3 * SLOW_STOP_MS);
    expect(lines).toHaveLength(3);
  });

  it("begins the engine's stop before it waits for the resolutions to close: a stopping worker starts no new work meanwhile", async () => {
    const { logger } = recordingLogger();
    const order: string[] = [];
    let closeResolutions!: () => void;
    const engine = {
      inFlight: 0,
      stop: async () => void order.push('engine stop begun'),
      metrics: () => ({}),
    } as unknown as Engine;
    const store = { close: async () => undefined } as unknown as Store;
    const stopper = new WorkerStop(logger);
    stopper.running({ rateLimits: { stop: () => undefined } as unknown as RateLimitWatch, engine, store });
    stopper.serving({
      stop: () => {
        order.push('resolutions stop begun');
        return new Promise<void>((resolve) => (closeResolutions = resolve));
      },
    } as unknown as Parameters<WorkerStop['serving']>[0]);

    const stopped = stopper.stopAsked({ graceMs: 5_000 });
    expect(order).toEqual(['engine stop begun', 'resolutions stop begun']);
    closeResolutions();
    await stopped;
  });
});
