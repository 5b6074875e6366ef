import { describe, expect, it } from 'vitest';
import { Engine } from '../../../src/engine/engine.js';
import { writeOffsetMetadata } from '../../../src/engine/offsetMetadata.js';
import type { EngineObserver } from '../../../src/engine/outcomes.js';
import type { LogRecord } from '../../../src/ports/log.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { SeededRandom } from '../../../testkit/seededRandom.js';
import { VirtualClock } from '../../../testkit/virtualClock.js';
import { decisionTopology, type Ev } from '../../driver/helpers.js';
import { handDrivenLog } from './handDrivenLog.js';

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
const tp = { topic: 'events', partition: 0 };

/** An engine over a log that assigns partition 0 with this committed offset and metadata. */
async function setup(committed: { offset: number; metadata?: string }) {
  const clock = new VirtualClock();
  const { log, commits, produced, listener } = handDrivenLog(tp, { committed });
  const resumed: Array<Parameters<NonNullable<EngineObserver['resumed']>>[0]> = [];
  const outcomes: Array<[number, string]> = [];
  const engine = new Engine({
    topology: decisionTopology(async () => ({ action: 'refund' })),
    log,
    clock: clock.view('engine'),
    store: await openMemoryStore(),
    random: new SeededRandom(1),
    commit: 'each',
    observer: { resumed: (r) => resumed.push(r), outcome: (o) => outcomes.push([o.offset, o.outcome]) },
  });
  await engine.start();
  const record = (offset: number, ev: Ev): LogRecord => ({
    ...tp,
    offset,
    key: ev.id,
    value: new TextEncoder().encode(JSON.stringify(ev)),
    timestampMs: 0,
    headers: {},
  });
  const deliver = async (...offsets: number[]) => {
    listener().records(offsets.map((o) => record(o, { id: `e${o}` })));
    for (let i = 0; i < 20; i++) await flush();
  };
  return { resumed, outcomes, commits, produced, deliver };
}

describe('the engine resumes a partition from its commit metadata', () => {
  it('skips the offsets it lists: no outcome, no output; then commits past them', async () => {
    const { resumed, outcomes, commits, produced, deliver } = await setup({ offset: 10, metadata: writeOffsetMetadata(10, [{ start: 12, end: 13 }]) });
    expect(resumed).toEqual([{ ...tp, offset: 10, finishedAbove: 1, atMs: 0 }]);
    await deliver(10, 11, 12, 13);
    expect(outcomes).toEqual([
      [10, 'APPLIED'],
      [11, 'APPLIED'],
      [13, 'APPLIED'],
    ]);
    expect(produced.map((r) => r.key)).toEqual(['e10', 'e11', 'e13']);
    expect(commits.at(-1)).toEqual([{ ...tp, offset: 14 }]);
  });

  it('ignores metadata of a newer format, with the reason, and runs every offset', async () => {
    const newer = writeOffsetMetadata(10, [{ start: 12, end: 13 }]).replace(/^o1:/, 'o2:');
    const { resumed, outcomes, deliver } = await setup({ offset: 10, metadata: newer });
    expect(resumed).toEqual([
      {
        ...tp,
        offset: 10,
        finishedAbove: 0,
        ignored: "it is in version 2 of orderly's format, and this orderly reads version 1 (a newer orderly wrote it)",
        atMs: 0,
      },
    ]);
    await deliver(10, 11, 12);
    expect(outcomes.map(([offset]) => offset)).toEqual([10, 11, 12]);
  });
});
