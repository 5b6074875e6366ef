import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { effect } from '../../../src/dsl/effect.js';
import { stream } from '../../../src/dsl/stream.js';

interface Dispute {
  readonly disputeId: string;
  readonly amount: number;
}

const Decision = z.object({ action: z.enum(['refund', 'reject']), reason: z.string() });

function disputes() {
  return stream<Dispute>('disputes')
    .filter((d) => d.amount > 0, { name: 'positive-amounts' })
    .keyedSerial({ maxInFlight: 3 })
    .agentStep('decide', async () => ({ action: 'refund' as const, reason: 'ok' }), {
      schema: Decision,
      limit: { calls: 60, windowMs: 60_000 },
    })
    .park({ attempts: 3, retryDelayMs: 1_000 })
    .applyOnce(effect('dispute-effects', (v: unknown) => v))
    .to('dispute-decisions')
    .build();
}

describe('Topology.describe()', () => {
  it('prints the disputes topology in Kafka Streams form, stores and topics included', () => {
    expect(disputes().describe()).toMatchInlineSnapshot(`
      "Topologies:
         Sub-topology: 0
          Source: disputes-source (topics: [disputes], dead letters: disputes.dlq)
            --> positive-amounts
          Processor: positive-amounts (stores: [])
            --> disputes-keyed-serial
            <-- disputes-source
          Processor: disputes-keyed-serial (stores: [], maxInFlight: 3)
            --> decide
            <-- positive-amounts
          Processor: decide (stores: [decide-attempts, decide-runs], limit: 60 calls per 60000 ms)
            --> decide-park
            <-- disputes-keyed-serial
          Processor: decide-park (stores: [decide-park], attempts: 3, retryDelayMs: 1000, topic: disputes.parked)
            --> dispute-effects
            <-- decide
          Processor: dispute-effects (stores: [dispute-effects])
            --> dispute-decisions-sink
            <-- decide-park
          Sink: dispute-decisions-sink (topic: dispute-decisions)
            <-- dispute-effects
      "
    `);
  });

  it('shows declared names, a custom parking topic and dead-letter topic, and no limit when none is declared', () => {
    const text = stream<Dispute>('orders', { deadLetterTopic: 'orders-bad' })
      .keyedSerial({ name: 'per-order' })
      .agentStep('classify', async () => 'x')
      .park({ attempts: 1, retryDelayMs: 0, topic: 'orders-held', name: 'hold' })
      .applyOnce(effect('apply', (v: unknown) => v))
      .build()
      .describe();
    expect(text).toContain('Source: orders-source (topics: [orders], dead letters: orders-bad)');
    expect(text).toContain('Processor: per-order (stores: [], maxInFlight: 1)');
    expect(text).toContain('Processor: classify (stores: [classify-attempts, classify-runs])\n');
    expect(text).toContain('Processor: hold (stores: [hold], attempts: 1, retryDelayMs: 0, topic: orders-held)');
    expect(text.endsWith('      <-- hold\n')).toBe(true);
  });

  it('shows a declared effect id and the window its records are kept', () => {
    const text = stream<Dispute>('orders', { effectId: ({ value }) => value.disputeId })
      .keyedSerial()
      .agentStep('classify', async () => 'x')
      .park({ attempts: 1 })
      .applyOnce(
        effect('apply', (v: unknown) => v),
        { idRetentionMs: 86_400_000 },
      )
      .build()
      .describe();
    expect(text).toContain('Source: orders-source (topics: [orders], dead letters: orders.dlq, effect ids: declared)');
    expect(text).toContain('Processor: apply (stores: [apply], idRetentionMs: 86400000)');
  });

  it('shows a disposition other than park, and the timeouts of a step and an effect', () => {
    const text = stream<Dispute>('orders')
      .keyedSerial()
      .agentStep('classify', async () => 'x', { timeoutMs: 30_000 })
      .park({ attempts: 2, onExhausted: 'dlq' })
      .applyOnce(effect('apply', (v: unknown) => v, { timeoutMs: 5_000 }))
      .build()
      .describe();
    expect(text).toContain('Processor: classify (stores: [classify-attempts, classify-runs], timeoutMs: 30000)\n');
    expect(text).toContain('Processor: classify-park (stores: [classify-park], attempts: 2, retryDelayMs: 1000, topic: orders.parked, onExhausted: dlq)\n');
    expect(text).toContain('Processor: apply (stores: [apply], timeoutMs: 5000)\n');
  });
});

describe('Topology.toMermaid()', () => {
  const mermaid = disputes().toMermaid();

  it('is a left-to-right flowchart with every operator as a box, chained in order', () => {
    expect(mermaid.startsWith('flowchart LR\n')).toBe(true);
    for (const box of [
      'source: disputes-source',
      'filter: positive-amounts',
      'keyedSerial: disputes-keyed-serial',
      'agentStep: decide',
      'park: decide-park',
      'applyOnce: dispute-effects',
      'sink: dispute-decisions-sink',
    ]) {
      expect(mermaid).toContain(`["${box}"]`);
    }
    for (let i = 1; i <= 6; i++) expect(mermaid).toContain(`n${i - 1} --> n${i}\n`);
  });

  it('draws every store as a cylinder', () => {
    for (const store of ['decide-attempts', 'decide-runs', 'decide-park', 'dispute-effects']) expect(mermaid).toContain(`[("${store}")]`);
  });

  it('draws every topic as a stadium: source, dead letters, parking and sink', () => {
    for (const topic of ['disputes', 'disputes.dlq', 'disputes.parked', 'dispute-decisions']) expect(mermaid).toContain(`(["${topic}"])`);
  });
});
