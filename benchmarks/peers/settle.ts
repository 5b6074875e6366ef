import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { round1 } from '../kafka/rss.js';

/** How the machine was when a contender started. */
export interface Settled {
  /** The 1-minute load average at the start. */
  readonly startLoadAverage: number;
  /** How long the benchmark waited for it to fall to the bound. */
  readonly settledMs: number;
}

/**
 * Waits until the machine's 1-minute load average is at most `maxLoad` (0: not at all), or
 * `maxWaitMs` has passed: a contender that starts right after a busy one (Parallel Consumer's
 * threads leave a load of 10–60 on 2 cores) would otherwise be measured on a machine the one
 * before it still holds. The load average decays with a one-minute time constant, so from 12 to
 * 1.5 takes about two minutes.
 */
export async function settle(maxLoad: number, maxWaitMs: number, pollMs = 2_000): Promise<Settled> {
  const started = performance.now();
  while (maxLoad > 0 && loadavg()[0]! > maxLoad && performance.now() - started < maxWaitMs) await sleep(pollMs);
  return { startLoadAverage: round1(loadavg()[0]!), settledMs: Math.round(performance.now() - started) };
}
