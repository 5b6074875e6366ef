import { describe, expect, it } from 'vitest';
import { fromKafkaHeaders, toKafkaHeaders, toProduceArgs } from '../../../../src/kafka/log/records.js';

describe('Kafka records', () => {
  it('gives librdkafka one header object per header, and reads them back', () => {
    const list = toKafkaHeaders({ a: '1', b: 'two' });
    expect(list).toEqual([{ a: '1' }, { b: 'two' }]);
    expect(fromKafkaHeaders(list)).toEqual({ a: '1', b: 'two' });
    expect(toKafkaHeaders({})).toBeUndefined();
    expect(toKafkaHeaders(undefined)).toBeUndefined();
  });

  it('makes the list of frozen headers (the changelog format header) once, with Buffer values that read back the same', () => {
    const frozen = Object.freeze({ 'orderly-format': '2' });
    const first = toProduceArgs({ topic: 't', partition: 0, key: 'k', value: null, headers: frozen }).headers;
    const second = toProduceArgs({ topic: 't', partition: 1, key: 'k2', value: null, headers: frozen }).headers;
    expect(second).toBe(first);
    expect(Buffer.isBuffer(first![0]!['orderly-format'])).toBe(true);
    expect(fromKafkaHeaders(first)).toEqual({ 'orderly-format': '2' });
    expect(toKafkaHeaders(Object.freeze({}))).toBeUndefined();
  });

  it('converts headers that are not frozen at each call: a caller may change them between records', () => {
    const headers: Record<string, string> = { a: '1' };
    expect(toKafkaHeaders(headers)).toEqual([{ a: '1' }]);
    headers.a = '2';
    expect(toKafkaHeaders(headers)).toEqual([{ a: '2' }]);
  });
});
