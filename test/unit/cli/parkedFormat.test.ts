import { describe, expect, it } from 'vitest';
import type { ParkedEvent } from '../../../src/engine/parkedKeys.js';
import { formatList, formatShow, summaryOf } from '../../../src/cli/parkedFormat.js';
import type { ParkedKeyView } from '../../../src/kafka/parked/parkedChangelog.js';

function event(offset: number, reason: 'POISON' | 'HELD', value: string | Buffer | null): ParkedEvent {
  const bytes = typeof value === 'string' ? Buffer.from(value) : value;
  return {
    event: {
      effectId: `disputes/1/${offset}`,
      lane: 'acct-02',
      key: 'acct-02',
      topic: 'disputes',
      partition: 1,
      offset,
      timestampMs: 0,
      headers: {},
      valueBase64: bytes && bytes.toString('base64'),
    },
    reason,
    step: 'decide',
    attempts: reason === 'POISON' ? 2 : 0,
    errors:
      reason === 'POISON'
        ? [
            { attempt: 1, atMs: 0, error: 'first' },
            { attempt: 2, atMs: 1_000, error: 'decision failed its schema' },
          ]
        : [],
    parkedAtMs: 60_000,
  };
}

const view: ParkedKeyView = {
  lane: 'acct-02',
  key: 'acct-02',
  status: 'parked',
  headSeq: 0,
  nextSeq: 3,
  parkedAtMs: 60_000,
  topic: 'disputes',
  partition: 1,
  head: event(12, 'POISON', '{"disputeId":"d-0012"}'),
  held: [event(17, 'HELD', '{"disputeId":"d-0017"}'), event(22, 'HELD', Buffer.from([0xff, 0x00]))],
  missing: 0,
};

describe('orderly parked output', () => {
  it('lists a key with its head, held count and parking time, in aligned columns', () => {
    expect(formatList([view, { ...view, partition: 10, lane: 'b', key: 'b', nextSeq: 1, held: [] }], 'disputes')).toBe(
      [
        'PARTITION  KEY      STATUS  OFFSET  EFFECT ID      HELD  PARKED AT',
        '1          acct-02  parked  12      disputes/1/12  2     1970-01-01T00:01:00.000Z',
        '10         b        parked  12      disputes/1/12  0     1970-01-01T00:01:00.000Z',
        '2 parked keys on disputes',
        '',
      ].join('\n'),
    );
    expect(formatList([], 'disputes')).toBe('no parked keys on disputes\n');
  });

  it('summarises a key for --json with its last error', () => {
    expect(summaryOf(view)).toEqual({
      partition: 1,
      key: 'acct-02',
      lane: 'acct-02',
      status: 'parked',
      head: { offset: 12, effectId: 'disputes/1/12', attempts: 2, lastError: 'decision failed its schema' },
      held: 2,
      parkedAt: '1970-01-01T00:01:00.000Z',
      parkedAtMs: 60_000,
    });
  });

  it('shows the head with every attempt, then the held events in order, binary values in base64', () => {
    const text = formatShow(view);
    expect(text).toContain('parked after 2 attempts');
    expect(text).toContain('attempt 1 at 1970-01-01T00:00:00.000Z: first');
    expect(text).toContain('attempt 2 at 1970-01-01T00:00:01.000Z: decision failed its schema');
    expect(text).toContain('value: {"disputeId":"d-0012"}');
    expect(text.indexOf('offset 17')).toBeLessThan(text.indexOf('offset 22'));
    expect(text).toContain('(2 bytes, base64) /wA=');
    expect(formatShow({ ...view, head: undefined, held: [], missing: 3 })).toMatch(/head: not in the changelog yet[\s\S]*\(3 more not in the changelog yet\)/);
  });

  it('says when the step had decided and what follows it failed (an effect that threw): a replay keeps the decision', () => {
    const step = view.head!.step;
    expect(formatShow(view)).toContain(`step '${step}', parked after 2 attempts: a replay calls the step again`);
    const effectFailed = { ...view, head: { ...view.head!, decisions: { [step]: { action: 'refund' } } } };
    expect(formatShow(effectFailed)).toContain(
      `step '${step}' decided; what follows it (the effect, or an operator after the step) failed its 2 attempts: a replay runs that again with the decision kept`,
    );
  });
});
