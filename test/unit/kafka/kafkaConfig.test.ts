import { describe, expect, it } from 'vitest';
import { checkUserProperties, consumerConfig, KAFKA_MAX_BUFFERED_PER_PARTITION, producerConfig } from '../../../src/kafka/kafkaConfig.js';

const settings = { bootstrap: '127.0.0.1:9092', group: 'g' };

describe('consumerConfig', () => {
  it("bounds librdkafka's read-ahead below its defaults (100,000 messages per partition, 64 MiB, 1 MiB fetches)", () => {
    const config = consumerConfig(settings) as Record<string, unknown>;
    expect(config['queued.min.messages']).toBe(2_000);
    expect(config['queued.max.messages.kbytes']).toBe(16_384);
    expect(config['fetch.message.max.bytes']).toBe(262_144);
    expect(config['fetch.queue.backoff.ms']).toBe(100);
  });

  it('lets consumerConfig and librdkafka settings override the read-ahead bounds', () => {
    const config = consumerConfig({
      ...settings,
      librdkafka: { 'fetch.message.max.bytes': 1_048_576 },
      consumerConfig: { 'queued.max.messages.kbytes': 65_536 },
    }) as Record<string, unknown>;
    expect(config['fetch.message.max.bytes']).toBe(1_048_576);
    expect(config['queued.max.messages.kbytes']).toBe(65_536);
    expect(config['queued.min.messages']).toBe(2_000);
  });

  it("keeps one engine buffer of read-ahead ready, and the runner's buffer leaves more than a refetch's worth at the resume", () => {
    const config = consumerConfig(settings) as Record<string, unknown>;
    expect(KAFKA_MAX_BUFFERED_PER_PARTITION).toBe(1_500);
    expect(config['queued.min.messages']).toBeGreaterThanOrEqual(KAFKA_MAX_BUFFERED_PER_PARTITION);
    // Resumed at half: 750 events outlast a 500 ms refetch (fetch.wait.max.ms) at the 1,400
    // events/s a partition runs at in the Kafka benchmark; 500 (the engine's default) did not.
    expect(KAFKA_MAX_BUFFERED_PER_PARTITION / 2).toBeGreaterThan(0.5 * 1_400);
  });
});

describe('producerConfig', () => {
  it('without transactions, is gap-less and never times a record out (a changelog partition holds a prefix of what was produced to it)', () => {
    const config = producerConfig(settings) as Record<string, unknown>;
    expect(config['enable.idempotence']).toBe(true);
    expect(config['enable.gapless.guarantee']).toBe(true);
    expect(config['message.timeout.ms']).toBe(0);
  });

  it('with transactions, leaves both to librdkafka: a failed record aborts the transaction, and its timeout must stay below the transaction timeout', () => {
    const config = producerConfig(settings, { transactionalId: 't', timeoutMs: 10_000 }) as Record<string, unknown>;
    expect(config['transactional.id']).toBe('t');
    expect(config['enable.gapless.guarantee']).toBeUndefined();
    expect(config['message.timeout.ms']).toBeUndefined();
  });
});

describe('checkUserProperties', () => {
  it('refuses the properties orderly owns, naming each, where it was set and why; lets every other through', () => {
    expect(() =>
      checkUserProperties({
        librdkafka: { 'enable.auto.commit': 'true', 'security.protocol': 'SSL' },
        consumerConfig: { 'group.id': 'other', 'max.poll.interval.ms': '600000' },
        producerConfig: { acks: '0', 'linger.ms': '20' },
      }),
    ).toThrow(
      "orderly sets these librdkafka properties itself; remove them: 'enable.auto.commit=true' in librdkafka (-X): orderly commits each partition itself, only up to the events it has finished; " +
        "'group.id=other' in consumerConfig (--consumer-config): set by --group (runTopology: group); " +
        "'acks=0' in producerConfig (--producer-config): orderly's records must be acknowledged by every in-sync replica before an event counts as finished",
    );
    expect(() =>
      checkUserProperties({
        librdkafka: { 'security.protocol': 'SSL' },
        consumerConfig: { 'max.poll.interval.ms': '600000' },
        producerConfig: { 'linger.ms': '20' },
      }),
    ).not.toThrow();
    expect(() => checkUserProperties({})).not.toThrow();
    // The values orderly sets itself are accepted, as strings from the command line or as values.
    expect(() =>
      checkUserProperties({ librdkafka: { 'enable.idempotence': 'true', acks: 'all' }, producerConfig: { 'request.required.acks': -1, dr_cb: true } }),
    ).not.toThrow();
    expect(() => checkUserProperties({ consumerConfig: { 'enable.auto.commit': '0' } })).not.toThrow();
  });

  it('judges the delivery settings by the delivery: gap-less without transactions, a report per record with them', () => {
    const timeout = { producerConfig: { 'message.timeout.ms': '30000' } };
    expect(() => checkUserProperties(timeout)).toThrow(
      "'message.timeout.ms=30000' in producerConfig (--producer-config): without transactions, a changelog must hold a prefix",
    );
    expect(() => checkUserProperties(timeout, true)).not.toThrow();
    const reports = { producerConfig: { 'delivery.report.only.error': 'true' } };
    expect(() => checkUserProperties(reports)).not.toThrow();
    expect(() => checkUserProperties(reports, true)).toThrow(
      "'delivery.report.only.error=true' in producerConfig (--producer-config): exactly-once, orderly's producer settles each record on its own delivery report",
    );
    expect(() => checkUserProperties({ librdkafka: { 'transaction.timeout.ms': '2000' } }, true)).toThrow('set by --transaction-timeout-ms');
  });
});
