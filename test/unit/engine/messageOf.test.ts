// What an error record keeps of a thrown value: an Error's message, a value's own toString, an
// object's JSON, and never more than 4,096 characters (it goes into headers and changelogs).
import { describe, expect, it } from 'vitest';
import { messageOf } from '../../../src/engine/events.js';

describe('messageOf', () => {
  it('an Error by its message, a value with its own toString by that, a plain object as JSON, the rest as text', () => {
    expect(messageOf(new Error('ledger down'))).toBe('ledger down');
    expect(messageOf({ status: 503, toString: () => 'HTTP 503' })).toBe('HTTP 503');
    class HttpError {
      constructor(readonly status: number) {}
      toString(): string {
        return `HTTP ${this.status}`;
      }
    }
    expect(messageOf(new HttpError(429))).toBe('HTTP 429');
    expect(messageOf({ code: 42, reason: 'locked' })).toBe('{"code":42,"reason":"locked"}');
    expect(messageOf({})).toBe('[object Object]');
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(messageOf(cycle)).toBe('[object Object]');
    expect(messageOf('plain text')).toBe('plain text');
    expect(messageOf(undefined)).toBe('undefined');
  });

  it('cuts a long one at 4,096 characters, saying how much was left out', () => {
    const message = messageOf({ body: 'x'.repeat(300_000) });
    expect(message).toHaveLength(4_096 + '... (295915 more characters)'.length);
    expect(message.endsWith('... (295915 more characters)')).toBe(true);
  });
});
