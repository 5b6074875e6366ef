import { isRateLimited } from '../../src/dsl/rateLimited.js';
import type { Outcome } from '../../src/engine/outcomes.js';
import type { FakeModel } from '../fakeModel.js';

/** Where an event sits: its partition, offset and key. */
export interface EventPlace {
  readonly partition: number;
  readonly offset: number;
  readonly key: string;
}

/** One thing the timeline draws, on the virtual clock (ms). */
export type TimelineMark =
  /** A call of the model: answered (a decision, valid or not), refused with a 429, or lost to a crash (`endMs` undefined). */
  | (EventPlace & { kind: 'call'; startMs: number; endMs: number | undefined; result: 'answered' | 'rate-limited' | 'lost'; attempt: number })
  /** The event waited between a 429 and its next call. */
  | (EventPlace & { kind: 'pause'; startMs: number; endMs: number })
  /** An outcome the engine reported (an attempt that failed is RETRY; PARKED, HELD, APPLIED, DUPLICATE, ...). */
  | (EventPlace & { kind: 'outcome'; atMs: number; outcome: Outcome; attempt?: number; replayed?: boolean })
  /** A record delivered again after the crash. */
  | (EventPlace & { kind: 'redelivery'; atMs: number })
  /** The partition's committed offset moved to `offset`. */
  | { kind: 'commit'; partition: number; offset: number; atMs: number }
  | { kind: 'crash'; atMs: number }
  | { kind: 'restart'; atMs: number };

/** A run drawn as marks, with the keys of each partition in the order they first appear. */
export interface WorkedExampleTimeline {
  readonly keysByPartition: readonly (readonly string[])[];
  readonly marks: readonly TimelineMark[];
  /** The model's window, to draw the window boundaries. */
  readonly windowMs: number;
}

type CallMark = Extract<TimelineMark, { kind: 'call' }>;

/**
 * Wraps a fake model so that every call it receives, and how it ended, is noted. The stats are the
 * model's own: the wrapper changes nothing the run measures.
 */
export function recordingModel<T, D>(model: FakeModel<T, D>): { model: FakeModel<T, D>; calls: readonly CallMark[] } {
  const calls: CallMark[] = [];
  return {
    calls,
    model: {
      stats: () => model.stats(),
      lastCall: (effectId) => model.lastCall(effectId),
      decide: async (event, ctx) => {
        const call: CallMark = {
          kind: 'call',
          partition: ctx.record.partition,
          offset: ctx.record.offset,
          key: ctx.key ?? '',
          startMs: ctx.clock.now(),
          endMs: undefined,
          result: 'lost',
          attempt: ctx.attempt,
        };
        calls.push(call);
        try {
          const decision = await model.decide(event, ctx);
          call.result = 'answered';
          return decision;
        } catch (error) {
          call.result = isRateLimited(error) ? 'rate-limited' : 'answered';
          throw error;
        } finally {
          call.endMs = ctx.clock.now();
        }
      },
    },
  };
}

/** The pauses between each 429 and the same event's next call. */
export function pausesAfterRateLimits(calls: readonly CallMark[]): TimelineMark[] {
  const byEvent = new Map<string, CallMark[]>();
  for (const call of calls) {
    const id = `${call.partition}/${call.offset}`;
    byEvent.set(id, [...(byEvent.get(id) ?? []), call]);
  }
  const pauses: TimelineMark[] = [];
  for (const eventCalls of byEvent.values()) {
    eventCalls.forEach((call, i) => {
      const next = eventCalls[i + 1];
      if (call.result === 'rate-limited' && next && call.endMs !== undefined && next.startMs > call.endMs) {
        pauses.push({ kind: 'pause', partition: call.partition, offset: call.offset, key: call.key, startMs: call.endMs, endMs: next.startMs });
      }
    });
  }
  return pauses;
}

/** Each partition's keys in offset order of first appearance. */
export function keysByPartition(events: readonly EventPlace[], partitions: number): string[][] {
  const keys = Array.from({ length: partitions }, () => [] as string[]);
  for (const e of events) if (!keys[e.partition]!.includes(e.key)) keys[e.partition]!.push(e.key);
  return keys;
}
