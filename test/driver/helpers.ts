import { z } from 'zod';
import { effect, type EffectContext } from '../../src/dsl/effect.js';
import { string } from '../../src/dsl/serde.js';
import { stream } from '../../src/dsl/stream.js';
import type { Topology } from '../../src/dsl/topology.js';
import type { OutcomeEvent } from '../../src/engine/outcomes.js';
import type { DecideFn, Disposition } from '../../src/graph/nodes.js';
import type { Headers } from '../../src/ports/log.js';
import type { TopologyTestDriver } from '../../testkit/driver.js';

/** The event of most driver tests: an id, and how long the model takes over it. */
export interface Ev {
  readonly id: string;
  readonly ms?: number;
  readonly bad?: boolean;
}

export const Decision = z.object({ action: z.enum(['refund', 'reject']) });
export type Decision = z.infer<typeof Decision>;

/** What the effect sends downstream. */
export interface Out {
  readonly id: string;
  readonly action: string;
}

export interface TopologyOptions {
  readonly topic?: string;
  readonly maxInFlight?: number;
  readonly attempts?: number;
  readonly retryDelayMs?: number;
  readonly retryJitter?: number;
  readonly onExhausted?: Disposition;
  readonly limit?: { calls: number; windowMs: number };
  readonly effectId?: (ctx: { value: Ev }) => string;
  /** Called by the effect, each time it runs. */
  readonly onApply?: (value: { event: Ev; decision: Decision }, ctx: EffectContext) => void;
}

/** keyedSerial, agentStep('decide') with the Decision schema, park, applyOnce('fx'), to('out'). */
export function decisionTopology(decide: DecideFn<Ev, unknown>, options: TopologyOptions = {}): Topology {
  return stream<Ev>(options.topic ?? 'events', options.effectId ? { effectId: options.effectId } : {})
    .keyedSerial({ maxInFlight: options.maxInFlight ?? 1 })
    .agentStep('decide', decide, { schema: Decision, ...(options.limit ? { limit: options.limit } : {}) })
    .park({
      attempts: options.attempts ?? 3,
      retryDelayMs: options.retryDelayMs ?? 1_000,
      ...(options.retryJitter !== undefined ? { retryJitter: options.retryJitter } : {}),
      ...(options.onExhausted !== undefined ? { onExhausted: options.onExhausted } : {}),
    })
    .applyOnce(
      effect('fx', (value: { event: Ev; decision: Decision }, ctx) => {
        options.onApply?.(value, ctx);
        return { id: value.event.id, action: value.decision.action } satisfies Out;
      }),
    )
    .to('out')
    .build();
}

/** The outcomes of the event with this id (its effect id is topic/partition/offset, so look it up by key and offset). */
export function outcomesAt(driver: TopologyTestDriver, partition: number, offset: number): OutcomeEvent['outcome'][] {
  return driver
    .history()
    .filter((h) => h.partition === partition && h.offset === offset)
    .map((h) => h.outcome);
}

/** The parking topic's records, their JSON bodies decoded. */
export interface ParkedRecordBody {
  readonly effectId: string;
  readonly reason: 'POISON' | 'HELD';
  readonly step: string;
  readonly key: string | null;
  readonly source: { topic: string; partition: number; offset: number };
  readonly valueBase64: string | null;
  readonly attempts: number;
  readonly errors: ReadonlyArray<{ attempt: number; atMs: number; error: string }>;
  readonly parkedAtMs: number;
}

export function readParked(driver: TopologyTestDriver, topic = 'events.parked'): Array<{ key: string | null; headers: Headers; body: ParkedRecordBody }> {
  return driver
    .createOutputTopic<string>(topic, { value: string() })
    .readRecordsToList()
    .map((r) => ({ key: r.key, headers: r.headers, body: JSON.parse(r.value) as ParkedRecordBody }));
}

/** Decodes a parked event's value. */
export function parkedValue(body: ParkedRecordBody): Ev {
  return JSON.parse(Buffer.from(body.valueBase64!, 'base64').toString('utf8')) as Ev;
}

/** Runs `work`, then returns the MaxListenersExceededWarnings Node emitted meanwhile (a shared signal with more than 10 listeners). */
export async function maxListenersWarnings(work: () => Promise<void>): Promise<string[]> {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => {
    if (warning.name === 'MaxListenersExceededWarning') warnings.push(warning.message);
  };
  process.on('warning', onWarning);
  try {
    await work();
    // Node emits its warnings on a later turn.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', onWarning);
  }
  return warnings;
}
