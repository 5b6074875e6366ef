import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as Orderly from '../src/index.js';
import type * as Testkit from '../testkit/driver.js';
import type { Decided } from '../src/index.js';
import type { Progress } from './progress.js';
import { mainThreadCpuMs } from './threadCpu.js';

/**
 * The engine and the driver as users run them: compiled by `npm run build` (which `npm run bench`
 * runs first), not through tsx, whose `keepNames` wraps every closure the engine makes per event
 * in a call of its own and so charges the engine for the loader's work.
 */
async function compiled(): Promise<{ orderly: typeof Orderly; testkit: typeof Testkit }> {
  const load = async <T>(path: string): Promise<T> => {
    try {
      return (await import(new URL(path, import.meta.url).href)) as T;
    } catch (error) {
      throw new Error(`engine throughput: ${path} could not be loaded (${(error as Error).message}); run npm run build first`, { cause: error });
    }
  };
  return { orderly: await load('../dist/src/index.js'), testkit: await load('../dist/testkit/driver.js') };
}

/** What the engine throughput benchmark runs. */
export interface EngineThroughputOptions {
  readonly events: number;
  readonly partitions: number;
  readonly keys: number;
  readonly maxInFlight: number;
  readonly commitEveryMs: number;
}

export const engineThroughputDefaults: EngineThroughputOptions = { events: 100_000, partitions: 4, keys: 10_000, maxInFlight: 32, commitEveryMs: 5_000 };

/** What it measured. */
export interface EngineThroughput extends EngineThroughputOptions {
  /** Events applied per wall-clock second, from the first poll to idle. */
  readonly eventsPerSec: number;
  /** Events applied per CPU second of the process (every thread: LevelDB's included); less skewed by other load. */
  readonly eventsPerCpuSec: number;
  /** Events applied per CPU second of the main thread alone (Linux only): the engine's and the driver's own cost. */
  readonly eventsPerMainThreadCpuSec?: number;
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly mainThreadCpuMs?: number;
  readonly applied: number;
}

interface Payment {
  readonly id: number;
  readonly account: string;
}

/**
 * The engine's own cost per event: stream → keyedSerial → agentStep (a decide that answers at
 * once) → park → applyOnce (one state row), in the test driver over real LevelDB in a temporary
 * directory, all of it compiled (see {@link compiled}). Only `runUntilIdle` is timed: piping the input in is not.
 */
export async function measureEngineThroughput(progress: Progress, options: EngineThroughputOptions = engineThroughputDefaults): Promise<EngineThroughput> {
  const {
    orderly: { effect, stream },
    testkit: { TopologyTestDriver },
  } = await compiled();
  const topology = stream<Payment>('payments')
    .keyedSerial({ maxInFlight: options.maxInFlight })
    .agentStep('decide', (payment: Payment) => ({ approve: payment.id % 7 !== 0 }))
    .park({ attempts: 3 })
    .applyOnce(
      effect('ledger', ({ event, decision }: Decided<Payment, { approve: boolean }>, { state }) => {
        state.put(String(event.id), decision.approve);
      }),
    )
    .build();
  const stateDir = await mkdtemp(join(tmpdir(), 'orderly-bench-'));
  const driver = new TopologyTestDriver(topology, { partitions: options.partitions, stateDir, commit: { everyMs: options.commitEveryMs } });
  try {
    const input = driver.createInputTopic<Payment>('payments');
    for (let id = 0; id < options.events; id++) {
      const account = `account-${id % options.keys}`;
      input.pipeInput(account, { id, account });
    }
    const phase = progress.phase('engine throughput', options.events, 'events');
    const applied = () => driver.metrics().outcomes.APPLIED;
    const ticker = setInterval(() => phase.update(applied()), 250);
    const cpuBefore = process.cpuUsage();
    const mainBefore = mainThreadCpuMs();
    const started = performance.now();
    try {
      await driver.runUntilIdle();
    } finally {
      clearInterval(ticker);
    }
    const wallMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const cpuMs = (cpu.user + cpu.system) / 1_000;
    const mainAfter = mainThreadCpuMs();
    const mainMs = mainBefore !== undefined && mainAfter !== undefined ? mainAfter - mainBefore : undefined;
    const result = {
      ...options,
      eventsPerSec: Math.round((applied() / wallMs) * 1_000),
      eventsPerCpuSec: Math.round((applied() / cpuMs) * 1_000),
      ...(mainMs ? { eventsPerMainThreadCpuSec: Math.round((applied() / mainMs) * 1_000) } : {}),
      wallMs: Math.round(wallMs),
      cpuMs: Math.round(cpuMs),
      ...(mainMs ? { mainThreadCpuMs: mainMs } : {}),
      applied: applied(),
    };
    phase.finish(`${result.eventsPerSec} events/s`);
    if (result.applied !== options.events) throw new Error(`engine throughput: ${result.applied} of ${options.events} events were applied`);
    return result;
  } finally {
    await driver.close();
    await rm(stateDir, { recursive: true, force: true });
  }
}
