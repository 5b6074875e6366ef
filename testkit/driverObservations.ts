import type { Topology } from '../src/dsl/topology.js';
import type { EffectRecord } from '../src/engine/outputs.js';
import { Outcome, type EngineObserver, type OutcomeEvent } from '../src/engine/outcomes.js';
import { partitionId, type TopicPartition } from '../src/ports/log.js';
import type { Store, StoreOp } from '../src/ports/store.js';
import { stateKeys } from '../src/state/stateKeys.js';

/** An effect as the store received it. */
export interface AppliedEffect extends Omit<EffectRecord, 'outputs'> {
  readonly instance: number;
  readonly recordedAtMs: number;
}

/** What the driver counted across every engine instance of a run. */
export interface DriverMetrics {
  /** Agent-step calls issued by the engines (accepted, refused or failed). */
  readonly modelCalls: number;
  /** 429s the engines received. */
  readonly rateLimited: number;
  /** Records delivered again after a crash. */
  readonly redeliveries: number;
  /** Redelivered events whose effect was found recorded: no model call, no effect. */
  readonly duplicatesPrevented: number;
  /** Calls issued for an event whose effect was already recorded. */
  readonly wastedModelCalls: number;
  /** Effects of one key recorded out of log order. */
  readonly orderViolations: number;
  /** Effect ids recorded twice. */
  readonly doubleEffects: number;
  readonly crashes: number;
  readonly outcomes: Readonly<Record<Outcome, number>>;
}

/**
 * What the driver sees from outside the engine: its outcomes, the effects the store received,
 * the records delivered. The invariants are checked against these, not against the engine's word.
 */
export class DriverObservations {
  readonly history: Array<OutcomeEvent & { instance: number }> = [];
  readonly effects: AppliedEffect[] = [];
  private readonly effectIds = new Set<string>();
  private readonly lastOffsetOfKey = new Map<string, number>();
  private readonly highestDelivered = new Map<string, number>();
  private readonly outcomes = Object.fromEntries(Object.values(Outcome).map((o) => [o, 0])) as Record<Outcome, number>;
  private counts = { modelCalls: 0, redeliveries: 0, wastedModelCalls: 0, orderViolations: 0, doubleEffects: 0, crashes: 0 };

  constructor(
    private readonly topology: Topology,
    private readonly state: () => Store | undefined,
  ) {}

  observer(instance: number, onFatal: (error: Error) => void): EngineObserver {
    const effectStore = this.topology.applyOnce?.name;
    return {
      outcome: (event) => {
        this.history.push({ ...event, instance });
        this.outcomes[event.outcome] += 1;
      },
      modelCall: (call) => {
        this.counts.modelCalls += 1;
        if (effectStore && this.state()?.get(stateKeys.effect(effectStore, call.effectId)) !== undefined) this.counts.wastedModelCalls += 1;
      },
      fatal: onFatal,
    };
  }

  delivered(tp: TopicPartition, offset: number): void {
    const id = partitionId(tp);
    const highest = this.highestDelivered.get(id) ?? -1;
    if (offset <= highest) this.counts.redeliveries += 1;
    else this.highestDelivered.set(id, offset);
  }

  /** A batch reached the store: note the effects it recorded. */
  written(ops: readonly StoreOp[], instance: number, atMs: number): void {
    const prefix = this.topology.applyOnce && stateKeys.effectPrefix(this.topology.applyOnce.name);
    if (!prefix) return;
    for (const op of ops) {
      if (op.type !== 'put' || !op.key.startsWith(prefix)) continue;
      const { outputs: _outputs, ...record } = op.value as EffectRecord;
      this.noteEffect({ ...record, instance, recordedAtMs: atMs });
    }
  }

  crashed(_atMs: number): void {
    this.counts.crashes += 1;
  }

  metrics(): DriverMetrics {
    return {
      ...this.counts,
      rateLimited: this.outcomes.RATE_LIMITED,
      duplicatesPrevented: this.outcomes.DUPLICATE,
      outcomes: { ...this.outcomes },
    };
  }

  private noteEffect(effect: AppliedEffect): void {
    if (this.effectIds.has(effect.effectId)) this.counts.doubleEffects += 1;
    this.effectIds.add(effect.effectId);
    this.effects.push(effect);
    if (effect.key === null) return;
    const lane = `${effect.topic}/${effect.partition}/${effect.key}`;
    if ((this.lastOffsetOfKey.get(lane) ?? -1) > effect.offset) this.counts.orderViolations += 1;
    this.lastOffsetOfKey.set(lane, effect.offset);
  }
}
