import { describe, expect, it } from 'vitest';
import { runsStoreOf } from '../../../src/graph/stores.js';
import { RunJournals } from '../../../src/engine/runJournals.js';
import { openMemoryStore } from '../../../src/state/levelStore.js';
import { stateKeys } from '../../../src/state/stateKeys.js';

const tp = { topic: 'disputes', partition: 1 };
const event = (offset: number) => ({ ...tp, effectId: `disputes/1/${offset}` });
const record = (name: string) => ({ name, atMs: 1, result: name });

describe('RunJournals', () => {
  it("deletes an event's journaled steps at its end, those loaded at assignment and those written since, and nothing for an event without", async () => {
    const store = await openMemoryStore();
    const runs = runsStoreOf('decide');
    // Two steps of event 7 journaled before the assignment.
    await store.batch(
      [0, 1].map((position) => ({ type: 'put' as const, key: stateKeys.runStep(runs, tp, event(7).effectId, position), value: record(`s${position}`) })),
    );
    const journals = new RunJournals(store, [{ name: 'decide' }, { name: 'review' }]);
    expect(journals.clear(event(7))).toEqual([]);
    await journals.load(tp);
    expect(journals.get('decide', event(7), 1)).toEqual(record('s1'));
    expect(journals.clear(event(8))).toEqual([]);
    expect(journals.clear(event(7))).toEqual([0, 1].map((position) => ({ type: 'del', key: stateKeys.runStep(runs, tp, event(7).effectId, position) })));
    // Cleared: asked again (a redelivery's end), nothing.
    expect(journals.clear(event(7))).toEqual([]);
    // Written since, at another step, and again at the same position: one delete per position.
    const put = journals.put('review', event(9), 0, record('r0'));
    journals.put('review', event(9), 0, record('r0'));
    expect(journals.clear(event(9))).toEqual([{ type: 'del', key: put.key }]);
    expect(journals.clear(event(9))).toEqual([]);
    // A partition loaded again forgets what it knew of it, and knows what its store holds.
    journals.put('decide', event(10), 0, record('d0'));
    await journals.load(tp);
    expect(journals.clear(event(10))).toEqual([]);
    await store.close();
  });
});
