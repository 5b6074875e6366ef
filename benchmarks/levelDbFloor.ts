import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RING_SIZE } from '../src/engine/effectRing.js';
import { openLevelStore } from '../src/state/levelStore.js';
import type { StoreOp } from '../src/ports/store.js';
import type { EngineThroughputOptions } from './engineThroughput.js';
import type { Progress } from './progress.js';

/** What the LevelDB floor measured. */
export interface LevelDbFloor {
  readonly events: number;
  /** Concurrent writers: the engine's partitions × maxInFlight. */
  readonly concurrency: number;
  /** Events per wall-clock second: each one lookup and one batch. */
  readonly eventsPerSec: number;
  /** Events per CPU second of the process (every thread). */
  readonly eventsPerCpuSec: number;
  readonly wallMs: number;
  readonly cpuMs: number;
}

/**
 * The floor under the engine benchmark: the LevelDB work an event of that topology asks for, with
 * no engine. Per event one lookup of its effect record and one batch of the ops the engine writes
 * for it (the state row and the effect record at its ring position, of the same keys and sizes,
 * written over once the ring wraps as the engine's are), from as many
 * concurrent writers as the engine keeps events in flight. It runs on the store the engine opens
 * (`openLevelStore`), so codecs and options are the engine's. The engine batches several events'
 * rows into one write, so it can beat this floor; the ratio engine ÷ floor is what compares across
 * runs on a machine whose speed drifts.
 */
export async function measureLevelDbFloor(progress: Progress, options: EngineThroughputOptions): Promise<LevelDbFloor> {
  const concurrency = options.partitions * options.maxInFlight;
  const directory = await mkdtemp(join(tmpdir(), 'orderly-floor-'));
  const store = await openLevelStore(directory);
  const phase = progress.phase('LevelDB floor', options.events, 'events');
  let next = 0;
  let done = 0;
  const writer = async (): Promise<void> => {
    for (let id = next++; id < options.events; id = next++) {
      const partition = id % options.partitions;
      const offset = Math.floor(id / options.partitions);
      const effectKey = `ring/ledger/payments/${partition}/${offset % RING_SIZE}`;
      // The engine looks an event up only below its horizon: the floor reads as often, once per event.
      if (store.get<{ offset: number }>(effectKey)?.offset === offset)
        throw new Error(`LevelDB floor: ${effectKey} held offset ${offset} before it was written`);
      const record = `{"topic":"payments","partition":${partition},"offset":${offset},"key":"account-${id % options.keys}","effectId":"payments/${partition}/${offset}","appliedAtMs":0,"outputs":[]}`;
      const ops: StoreOp[] = [
        { type: 'put', key: `table/ledger/payments/${partition}/${id}`, value: id % 7 !== 0 ? 'true' : 'false', valueEncoding: 'utf8' } as StoreOp,
        { type: 'put', key: effectKey, value: record, valueEncoding: 'utf8' } as StoreOp,
      ];
      await store.batch(ops);
      done++;
    }
  };
  const ticker = setInterval(() => phase.update(done), 250);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  try {
    await Promise.all(Array.from({ length: concurrency }, writer));
  } finally {
    clearInterval(ticker);
    await store.close();
    await rm(directory, { recursive: true, force: true });
  }
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1_000;
  const result = {
    events: done,
    concurrency,
    eventsPerSec: Math.round((done / wallMs) * 1_000),
    eventsPerCpuSec: Math.round((done / cpuMs) * 1_000),
    wallMs: Math.round(wallMs),
    cpuMs: Math.round(cpuMs),
  };
  phase.finish(`${result.eventsPerSec} events/s`);
  return result;
}
