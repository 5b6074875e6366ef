import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLevelStore } from '../src/state/levelStore.js';
import type { StoreOp } from '../src/ports/store.js';
import type { EngineThroughputOptions } from './engineThroughput.js';
import type { Progress } from './progress.js';

/** How many events back the floor prunes an effect record: well behind every writer, as a commit is. */
const PRUNE_LAG = 10_000;

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
 * for it (the state row and the effect record, of the same keys and sizes, and the delete that
 * prunes an earlier event's effect record once it is committed), from as many
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
      const effectKey = `effect/ledger/payments/${partition}/payments/${partition}/${offset}`;
      if (store.get(effectKey) !== undefined) throw new Error(`LevelDB floor: ${effectKey} was found before it was written`);
      const record = `{"topic":"payments","partition":${partition},"offset":${offset},"key":"account-${id % options.keys}","effectId":"payments/${partition}/${offset}","appliedAtMs":0,"outputs":[]}`;
      const ops: StoreOp[] = [
        { type: 'put', key: `table/ledger/payments/${partition}/${id}`, value: id % 7 !== 0 ? 'true' : 'false', valueEncoding: 'utf8' } as StoreOp,
        { type: 'put', key: effectKey, value: record, valueEncoding: 'utf8' } as StoreOp,
      ];
      // The engine prunes each record once the committed offset is past it: one delete per event, later.
      const pruned = id - PRUNE_LAG;
      if (pruned >= 0)
        ops.push({
          type: 'del',
          key: `effect/ledger/payments/${pruned % options.partitions}/payments/${pruned % options.partitions}/${Math.floor(pruned / options.partitions)}`,
        });
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
