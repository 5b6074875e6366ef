import type { ProcessorNode } from '../graph/nodes.js';
import type { LogRecord, OutRecord } from '../ports/log.js';
import type { StoreOp } from '../ports/store.js';
import { stateKeys } from '../state/stateKeys.js';
import { abortable, sleep } from '../ports/clock.js';
import { timedCall } from './callTimeout.js';
import { attemptsKeyOf, retryDelayMs, runAgentStep, type AttemptError, type AttemptsRecord } from './agentStepRunner.js';
import type { EngineContext } from './engineContext.js';
import { messageOf, metaOf, offsetEffectId, toEngineEvent, where, type EngineEvent } from './events.js';
import { failedAttempts, operatorError } from './operatorFailure.js';
import { Outcome } from './outcomes.js';
import { deadLetterRecord } from './deadLetters.js';
import { EFFECT_ID_HEADER, loadOutput, storeOutput, type EffectRecord } from './outputs.js';
import { StagedTable } from './stagedTable.js';

/** How an event left the pipeline. `parked`: the step failed its last attempt, or a user function threw; the caller parks it. */
export type PipelineResult =
  | {
      readonly kind: 'ended';
      readonly outcome: Outcome;
      /**
       * With {@link RunOptions.untilLanded}: the event's end has landed but is not durable yet;
       * this settles once it is (state acknowledged, then outputs sent and acknowledged), and
       * rejects if it never will be. Absent: the end is durable already.
       */
      readonly durable?: Promise<void>;
    }
  | { readonly kind: 'parked'; readonly attempts: AttemptsRecord };

/** How a replayed event enters: with ops to land when it is done, and maybe a person's decision. */
export interface RunOptions {
  /** Written when the event is done: with its effect if it has no outputs, else once they are sent (a replay removes the held event with it). */
  readonly endOps?: () => readonly StoreOp[];
  /** Skip the agent step and use this (already validated) decision. */
  readonly decision?: { readonly value: unknown };
  readonly replayed?: boolean;
  /** Aborted when the engine gives the event up (revoked, lost, stopping): it then ends unfinished, nothing written. */
  readonly signal?: AbortSignal;
  /** The event lies past its partition's effect horizon: it has no effect record, so none is looked up. */
  readonly unrecorded?: boolean;
  /**
   * Return once the event's end has landed (its state written locally and its changelog records
   * handed to the producer, in order), with the rest in {@link PipelineResult} `durable`, when
   * the store stages its writes and the log has no units (exactly-once). Not with `endOps`.
   */
  readonly untilLanded?: boolean;
}

const NEVER_ABORTED = new AbortController().signal;

type ApplyNode = ProcessorNode & { kind: 'applyOnce' };
/** What applying an effect came to: its result, or the event parked after its last attempt. */
type Applied = { kind: 'applied'; value: unknown } | (PipelineResult & { kind: 'parked' });

/** A decoded event, or the reason it could not be decoded. */
export type Decoded = { readonly ok: true; readonly event: EngineEvent; readonly value: unknown } | { readonly ok: false; readonly event: EngineEvent; readonly error: string };

/**
 * The way of one event, read straight down: decode, look up its effect, run the operators in
 * chain order (the agent step among them), then record the effect and its outputs and send them.
 */
export class EventPipeline {
  constructor(private readonly ctx: EngineContext) {}

  /** Decodes a record and computes its effect id. */
  decode(record: LogRecord): Decoded {
    const source = this.ctx.topology.source;
    const fallback = toEngineEvent(record, offsetEffectId(record));
    if (record.value === null) return { ok: false, event: fallback, error: `${source.name}: the record has no value (a tombstone)` };
    let value: unknown;
    try {
      value = source.value.deserialize(record.value);
    } catch (error) {
      return { ok: false, event: fallback, error: `${source.name}: ${source.value.name} could not decode the value: ${messageOf(error)}` };
    }
    if (!source.effectId) return { ok: true, event: fallback, value };
    try {
      const effectId = source.effectId({ key: record.key, value, record: metaOf(fallback) });
      if (typeof effectId !== 'string' || effectId === '') throw new Error(`it returned ${JSON.stringify(effectId)}, not a non-empty string`);
      return { ok: true, event: toEngineEvent(record, effectId), value };
    } catch (error) {
      return { ok: false, event: fallback, error: `${source.name}: effectId failed: ${messageOf(error)}` };
    }
  }

  /** Decodes a stored (parked) event again. */
  decodeStored(event: EngineEvent): unknown {
    return this.ctx.topology.source.value.deserialize(event.value!);
  }

  /** Sends an undecodable record to the dead-letter topic with its error. */
  async deadLetter(event: EngineEvent, error: string): Promise<Outcome> {
    await this.ctx.log.produce([deadLetterRecord(this.ctx.topology.source.deadLetterTopic, event, error), ...this.ctx.jobs.response(event, { state: 'failed', reason: error })]);
    this.ctx.report(Outcome.DEAD_LETTERED, event, { error });
    return Outcome.DEAD_LETTERED;
  }

  /**
   * True if the event already ended for good (its effect recorded, or a person discarded it): a
   * redelivery of it must not run again, nor be held behind a key parked after it ended.
   */
  isDone(event: EngineEvent): boolean {
    return this.recorded(event) !== undefined;
  }

  /** Runs a decoded event through every operator. */
  async run(event: EngineEvent, value: unknown, options: RunOptions = {}): Promise<PipelineResult> {
    const apply = this.ctx.topology.applyOnce;
    const recorded = options.unrecorded ? undefined : this.recorded(event);
    if (recorded?.discardedAtMs !== undefined) return this.end(event, Outcome.DISCARDED, [], [], options);
    // On an exactly-once log the outputs were committed in the effect record's transaction.
    if (recorded) return this.end(event, Outcome.DUPLICATE, [], this.ctx.log.atomic ? [] : recorded.outputs.map(loadOutput), options);
    const staged: StoreOp[] = [];
    const outputs: OutRecord[] = [];
    let current = value;
    // The operators run inline, and a user function's result is awaited only if it is a promise:
    // an event goes through the whole chain with as few promises as its functions need.
    for (const node of this.ctx.topology.processors) {
      switch (node.kind) {
        case 'filter': {
          let kept: unknown;
          try {
            const result = node.predicate(current, event.key);
            kept = isThenable(result) ? await result : result;
          } catch (error) {
            return this.threw(node, event, error, options);
          }
          if (!kept) return this.end(event, Outcome.FILTERED, [], [], options);
          break;
        }
        case 'mapValues': {
          try {
            const mapped = node.mapper(current, event.key);
            current = isThenable(mapped) ? await mapped : mapped;
          } catch (error) {
            return this.threw(node, event, error, options);
          }
          break;
        }
        case 'agentStep': {
          if (options.decision) {
            current = { event: current, decision: options.decision.value };
            break;
          }
          const stepped = runAgentStep(this.ctx, node, this.ctx.topology.park!, event, current, options.signal ?? NEVER_ABORTED);
          const result = isThenable(stepped) ? await stepped : stepped;
          if (!result.ok) return { kind: 'parked', attempts: result.attempts };
          // Most decisions come at the first attempt: then there is no attempts record to delete.
          if (result.attemptsStored) staged.push({ type: 'del', key: attemptsKeyOf(node, event) });
          current = { event: current, decision: result.decision };
          break;
        }
        case 'applyOnce': {
          const effected = this.applyEffect(node, event, current, staged, options);
          const applied = isThenable(effected) ? await effected : effected;
          if (applied.kind === 'parked') return applied;
          if (applied.value !== undefined) current = applied.value;
          break;
        }
        case 'sink': {
          let value: Uint8Array | null;
          try {
            value = node.value.serialize(current);
          } catch (error) {
            return this.threw(node, event, error, options);
          }
          outputs.push({ topic: node.topic, key: event.key, value, headers: { [EFFECT_ID_HEADER]: event.effectId } });
          break;
        }
        case 'respond': {
          let records: OutRecord[];
          try {
            records = this.ctx.jobs.response(event, { state: 'done', result: current });
          } catch (error) {
            return this.threw(node, event, error, options);
          }
          for (const record of records) outputs.push(record);
          break;
        }
        case 'keyedSerial':
        case 'park':
          // They shape the scheduling and the parking, not the value.
          break;
      }
    }
    return this.end(event, apply ? Outcome.APPLIED : Outcome.FORWARDED, staged, outputs, options);
  }

  /**
   * Applies the effect; a throw (an outside system down, say) is retried after the park's delay,
   * with the decision kept, up to the park's attempts, and then parks the event. Its state table
   * writes count only from the attempt that succeeds. An effect that returns at once on its first
   * attempt is applied without a promise.
   */
  private applyEffect(node: ApplyNode, event: EngineEvent, value: unknown, staged: StoreOp[], options: RunOptions): Applied | Promise<Applied> {
    const table = new StagedTable(this.ctx.store, node.name, event);
    let applied: unknown;
    try {
      applied = this.callEffect(node, event, value, table, options);
    } catch (error) {
      return this.retryEffect(node, event, value, staged, options, error);
    }
    if (isThenable(applied)) return this.settleEffect(node, event, value, staged, options, table, applied);
    table.stageInto(staged);
    return { kind: 'applied', value: applied };
  }

  /** Calls the effect once; with a timeout, a call that passes it rejects (its late result is dropped) and counts as a failed attempt. */
  private callEffect(node: ApplyNode, event: EngineEvent, value: unknown, table: StagedTable, options: RunOptions): unknown {
    const signal = options.signal ?? NEVER_ABORTED;
    const timeoutMs = node.effect.timeoutMs;
    if (timeoutMs === undefined) return node.effect.apply(value, { key: event.key, effectId: event.effectId, record: metaOf(event), state: table, signal });
    const call = timedCall(this.ctx.clock, signal, timeoutMs, `applyOnce '${node.name}'`);
    let applied: unknown;
    try {
      applied = node.effect.apply(value, { key: event.key, effectId: event.effectId, record: metaOf(event), state: table, signal: call.signal });
    } catch (error) {
      call.end();
      throw error;
    }
    if (!isThenable(applied)) {
      call.end();
      return applied;
    }
    return abortable(Promise.resolve(applied), call.signal).finally(() => call.end());
  }

  /** Waits for an effect's promised result; a rejection goes on as a failed attempt. */
  private async settleEffect(node: ApplyNode, event: EngineEvent, value: unknown, staged: StoreOp[], options: RunOptions, table: StagedTable, applied: PromiseLike<unknown>): Promise<Applied> {
    let result: unknown;
    try {
      result = await applied;
    } catch (error) {
      return this.retryEffect(node, event, value, staged, options, error);
    }
    table.stageInto(staged);
    return { kind: 'applied', value: result };
  }

  /** The effect's first attempt failed with `error`: the next ones, after the park's delay. */
  private async retryEffect(node: ApplyNode, event: EngineEvent, value: unknown, staged: StoreOp[], options: RunOptions, error: unknown): Promise<Applied> {
    const park = this.ctx.topology.park;
    const errors: AttemptError[] = [];
    for (let attempt = 1; ; attempt += 1) {
      if (attempt > 1) {
        const table = new StagedTable(this.ctx.store, node.name, event);
        try {
          const applied = this.callEffect(node, event, value, table, options);
          const result = isThenable(applied) ? await applied : applied;
          table.stageInto(staged);
          return { kind: 'applied', value: result };
        } catch (thrown) {
          error = thrown;
        }
      }
      const message = operatorError(node, error);
      errors.push({ attempt, atMs: this.ctx.clock.now(), error: message });
      if (!park || attempt >= park.attempts) return { kind: 'parked', attempts: failedAttempts(this.ctx, node, event, errors, options.signal) };
      if (options.signal?.aborted) throw options.signal.reason;
      this.ctx.report(Outcome.RETRY, event, { attempt, error: message });
      await sleep(this.ctx.clock, retryDelayMs(this.ctx, park), options.signal);
    }
  }

  /** A filter, mapValues or serializer threw: the event is parked at once (the same input throws again), or the engine stops. */
  private threw(node: ProcessorNode, event: EngineEvent, error: unknown, options: RunOptions): PipelineResult {
    const errors = [{ attempt: 1, atMs: this.ctx.clock.now(), error: operatorError(node, error) }];
    return { kind: 'parked', attempts: failedAttempts(this.ctx, node, event, errors, options.signal) };
  }

  /** Writes the event's state, then sends its outputs; on an exactly-once log, inside one transaction. */
  private async land(ops: StoreOp[], outputs: OutRecord[], options: RunOptions): Promise<void> {
    if (outputs.length === 0 && options.endOps) for (const op of options.endOps()) ops.push(op);
    if (ops.length > 0) await this.ctx.writer.write(ops);
    if (outputs.length > 0) {
      await this.ctx.log.produce(outputs);
      const after = options.endOps?.() ?? [];
      if (after.length > 0) await this.ctx.writer.write(after);
    }
  }

  private recorded(event: EngineEvent): EffectRecord | undefined {
    const apply = this.ctx.topology.applyOnce;
    return apply && this.ctx.store.get<EffectRecord>(stateKeys.effect(apply.name, event, event.effectId));
  }

  /** The record that ends a discarded event for good, written with its removal from its parked key. */
  discardRecord(event: Omit<EngineEvent, 'value'>): StoreOp {
    const apply = this.ctx.topology.applyOnce!;
    const record: EffectRecord = { ...where(event), appliedAtMs: this.ctx.clock.now(), discardedAtMs: this.ctx.clock.now(), outputs: [] };
    return { type: 'put', key: stateKeys.effect(apply.name, event, event.effectId), value: record };
  }

  /**
   * Records the effect (with its outputs) and the caller's ops in one batch, then sends the outputs.
   * With outputs to send, the caller's ops go in a batch of their own after them: a replayed event's
   * offset is committed already, so only its held copy, still in the store, can have its outputs
   * re-sent (as a DUPLICATE) if the engine crashes before they are out.
   */
  private async end(event: EngineEvent, outcome: Outcome, staged: StoreOp[], outputs: OutRecord[], options: RunOptions): Promise<PipelineResult> {
    // The last moment to give up: past it the effect is recorded, so the event runs to its end.
    options.signal?.throwIfAborted();
    // `staged` is this event's own array (run's, or a fresh one): the effect's ops join it.
    const ops = staged;
    const apply = this.ctx.topology.applyOnce;
    if (outcome === Outcome.APPLIED && apply) {
      const record: EffectRecord = {
        topic: event.topic,
        partition: event.partition,
        offset: event.offset,
        key: event.key,
        effectId: event.effectId,
        appliedAtMs: this.ctx.clock.now(),
        outputs: outputs.length === 0 ? [] : outputs.map(storeOutput),
      };
      ops.push({ type: 'put', key: stateKeys.effect(apply.name, event, event.effectId), value: record });
    }
    const log = this.ctx.log;
    if (log.atomic) await log.atomic(() => this.land(ops, outputs, options));
    else if (options.untilLanded && !options.endOps && this.ctx.writer.pipelined) return this.landOnly(event, outcome, ops, outputs);
    // The usual end, nothing to send: the write alone, without land's frame.
    else if (outputs.length === 0 && !options.endOps) {
      if (ops.length > 0) await this.ctx.writer.write(ops);
    } else await this.land(ops, outputs, options);
    this.ctx.report(outcome, event, options.replayed ? { replayed: true } : undefined);
    return endedWith[outcome];
  }

  /**
   * Writes the event's state and returns once it has landed; the outputs go out once the state
   * is durable (a crash before that must not leave outputs of an effect the state lost), and
   * `durable` settles when they are acknowledged. The outputs of one key's events go out in
   * their order: their states become durable in order, and each sends in that settlement's turn.
   */
  private async landOnly(event: EngineEvent, outcome: Outcome, ops: StoreOp[], outputs: OutRecord[]): Promise<PipelineResult> {
    let durable: Promise<void>;
    if (ops.length > 0) {
      const staged = this.ctx.writer.stage(ops);
      await staged.landed;
      durable = outputs.length > 0 ? staged.durable.then(() => this.ctx.log.produce(outputs)) : staged.durable;
    } else if (outputs.length > 0) {
      durable = this.ctx.log.produce(outputs);
    } else {
      this.ctx.report(outcome, event);
      return { kind: 'ended', outcome };
    }
    return { kind: 'ended', outcome, durable: durable.then(() => this.ctx.report(outcome, event)) };
  }
}

/** One result object per outcome, shared: the pipeline's results are read, never changed. */
const endedWith = Object.fromEntries(Object.values(Outcome).map((outcome) => [outcome, Object.freeze({ kind: 'ended', outcome })])) as Record<
  Outcome,
  PipelineResult & { kind: 'ended' }
>;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}
