// A partition whose restore the engine's stop overtakes: what it read of its parked events must
// not arm the fallback's circuit (a timer of a real clock would hold a stopped worker's process).
import { describe, expect, it } from 'vitest';
import { Engine } from '../../../src/engine/engine.js';
import { ParkedKeys, type ParkedEvent } from '../../../src/engine/parkedKeys.js';
import type { TopicPartition } from '../../../src/ports/log.js';
import type { Store } from '../../../src/ports/store.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { stream } from '../../../src/dsl/stream.js';
import { effect } from '../../../src/dsl/effect.js';
import { SeededRandom } from '../../../testkit/seededRandom.js';
import { VirtualClock } from '../../../testkit/virtualClock.js';
import { Decision, type Ev } from '../../driver/helpers.js';
import { handDrivenLog } from '../engine/handDrivenLog.js';

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
const tp: TopicPartition = { topic: 'events', partition: 0 };

describe('a fallback over a partition that restores', () => {
  it('stopped while it restores, tells the circuit nothing of its parked events: no timer is left running', async () => {
    const clock = new VirtualClock();
    clock.advanceTo(5_000);
    const memory = await openMemoryStore();
    const built = stream<Ev>('events')
      .keyedSerial({ maxInFlight: 2 })
      .agentStep('decide', async () => ({ action: 'refund' }), { schema: Decision })
      .park({ attempts: 3, retryDelayMs: 1_000 })
      .fallback('rules', (): Decision => ({ action: 'reject' }), { afterMs: 60_000, halfOpenAfterMs: 3_000 })
      .applyOnce(effect('fx', (v: unknown) => v))
      .to('out')
      .build();
    const park = built.park!;
    const parked = new ParkedKeys(memory, park.name, tp);
    const poison: ParkedEvent = {
      event: { topic: 'events', partition: 0, offset: 0, key: 'k', lane: 'k', effectId: 'events-0-0', timestampMs: 0, valueBase64: '', headers: {} } as never,
      reason: 'POISON',
      step: 'decide',
      attempts: 3,
      errors: [1, 2, 3].map((attempt) => ({ attempt, atMs: attempt * 1_000, error: 'boom' })),
      parkedAtMs: 3_000,
    };
    await memory.batch(parked.park(poison));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const store: Store = Object.assign(Object.create(memory) as Store, {
      entries: async (prefix: string, o?: never) => {
        if (prefix === parked.prefix) await gate;
        return memory.entries(prefix, o);
      },
    });
    const { log } = handDrivenLog(tp);
    const engine = new Engine({ topology: built, log, clock: clock.view('engine'), store, random: new SeededRandom(1), commit: 'each' });
    const starting = engine.start();
    await flush();
    await engine.stop();
    expect(clock.nextDueMs()).toBeUndefined();
    release();
    await starting.catch(() => undefined);
    await flush();
    expect(clock.nextDueMs(), 'a timer set after the engine stopped').toBeUndefined();
  });
});
