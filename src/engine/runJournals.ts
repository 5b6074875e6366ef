import { runsStoreOf } from '../graph/stores.js';
import type { TopicPartition } from '../ports/log.js';
import type { Store, StoreOp } from '../ports/store.js';
import { stateKeys } from '../state/stateKeys.js';

/** One completed durable step of a run, as its journal holds it. */
export interface RunStepRecord {
  /** The name the step was given (`ctx.step(name, fn)`): checked against the code when the run resumes. */
  readonly name: string;
  /** What the step returned, as JSON reads it back; absent when it returned `undefined`. */
  readonly result?: unknown;
  /** Clock port time the step completed. */
  readonly atMs: number;
}

/** What names an event's run: its partition and its effect id. */
type RunOf = TopicPartition & { readonly effectId: string };

/**
 * Every read, write and delete of a run journal: the completed durable steps of one event at one
 * agent step, one record per position, in the step's `<step>-runs` store. A journal exists only
 * while its event has completed durable steps and has not ended.
 *
 * Most events have none, and every event's end asks: so that neither costs a LevelDB read, it
 * knows which events of a loaded partition have a journal and up to which position, read at
 * assignment and followed through the writes it makes (the only writes to these keys). A
 * partition is loaded again at each assignment, which also forgets writes an aborted transaction
 * threw away.
 */
export class RunJournals {
  /** Per partition prefix of a store: effect id → positions written (the highest one + 1). */
  private readonly known = new Map<string, Map<string, number>>();
  /** Journals in `known`, all partitions and steps together. */
  private journaled = 0;
  /** The runs stores, by agent step name. */
  private readonly stores: ReadonlyMap<string, string>;
  /** Prefixes by store, topic and partition, built once: an event's end builds no string. */
  private readonly prefixes = new Map<string, Map<string, string[]>>();

  constructor(
    private readonly store: Store,
    steps: ReadonlyArray<{ readonly name: string }>,
  ) {
    this.stores = new Map(steps.map((s) => [s.name, runsStoreOf(s.name)]));
  }

  /** Reads which events of the partition have a journal at each agent step. */
  async load(tp: TopicPartition): Promise<void> {
    for (const store of this.stores.values()) {
      const prefix = this.prefixOf(store, tp);
      this.journaled -= this.known.get(prefix)?.size ?? 0;
      this.known.delete(prefix);
      const journals = new Map<string, number>();
      for (const [key] of await this.store.entries(prefix)) {
        const rest = key.slice(prefix.length);
        const cut = rest.lastIndexOf('/');
        const effectId = rest.slice(0, cut);
        const bound = Number(rest.slice(cut + 1)) + 1;
        if (bound > (journals.get(effectId) ?? 0)) journals.set(effectId, bound);
      }
      this.known.set(prefix, journals);
      this.journaled += journals.size;
    }
  }

  /** The step journaled at `position` of the event's run at agent step `step`, if it completed. */
  get(step: string, event: RunOf, position: number): RunStepRecord | undefined {
    const store = this.storeOf(step);
    const journals = this.known.get(this.prefixOf(store, event));
    if (journals && (journals.get(event.effectId) ?? 0) <= position) return undefined;
    return this.store.get<RunStepRecord>(stateKeys.runStep(store, event, event.effectId, position));
  }

  /** The write that journals a completed step at `position`. */
  put(step: string, event: RunOf, position: number, record: RunStepRecord): StoreOp {
    const store = this.storeOf(step);
    const prefix = this.prefixOf(store, event);
    let journals = this.known.get(prefix);
    if (!journals) this.known.set(prefix, (journals = new Map()));
    const bound = journals.get(event.effectId);
    if (bound === undefined) this.journaled += 1;
    if (position + 1 > (bound ?? 0)) journals.set(event.effectId, position + 1);
    return { type: 'put', key: stateKeys.runStep(store, event, event.effectId, position), value: record };
  }

  /** Deletes of every journaled step of the event, at every agent step: its end leaves no run behind. */
  clear(event: RunOf): readonly StoreOp[] {
    // No journal in any loaded partition (no step of the topology calls ctx.step, or none is under way): every event's end asks.
    if (this.journaled === 0) return NO_OPS;
    let ops: StoreOp[] | undefined;
    for (const store of this.stores.values()) {
      const journals = this.known.get(this.prefixOf(store, event));
      const bound = journals?.get(event.effectId);
      if (!bound) continue;
      journals!.delete(event.effectId);
      this.journaled -= 1;
      ops ??= [];
      for (let position = 0; position < bound; position++) ops.push({ type: 'del', key: stateKeys.runStep(store, event, event.effectId, position) });
    }
    return ops ?? NO_OPS;
  }

  private prefixOf(store: string, tp: TopicPartition): string {
    let byTopic = this.prefixes.get(store);
    if (!byTopic) this.prefixes.set(store, (byTopic = new Map()));
    let byPartition = byTopic.get(tp.topic);
    if (!byPartition) byTopic.set(tp.topic, (byPartition = []));
    return (byPartition[tp.partition] ??= stateKeys.runPartitionPrefix(store, tp));
  }

  private storeOf(step: string): string {
    const store = this.stores.get(step);
    if (store === undefined) throw new Error(`run journal: '${step}' is not an agent step of this topology`);
    return store;
  }
}

const NO_OPS: readonly StoreOp[] = Object.freeze([]);
