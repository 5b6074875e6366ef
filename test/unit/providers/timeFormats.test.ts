import { describe, expect, it } from 'vitest';
import { parseDecimal, parseDuration, parseHttpDate, parseRfc3339 } from '../../../src/providers/timeFormats.js';

const NOW = Date.UTC(2026, 11, 1, 13, 0, 0);

describe('parseDecimal', () => {
  it.each([
    ['0', 0],
    ['17', 17],
    [' 2.5 ', 2.5],
  ])('reads %j', (text, value) => expect(parseDecimal(text)).toBe(value));

  it.each(['', '-1', '1e3', 'abc', '1.', '.5', '1,5', 'Infinity', '0x10'])('refuses %j', (text) => expect(parseDecimal(text)).toBeUndefined());
});

describe('parseHttpDate (RFC 9110)', () => {
  const at = Date.UTC(1994, 10, 6, 8, 49, 37);
  it('reads IMF-fixdate', () => expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', NOW)).toBe(at));
  it('reads the obsolete RFC 850 form, a two-digit year more than 50 years ahead being in the past century', () => {
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', NOW)).toBe(at);
    expect(parseHttpDate('Tuesday, 01-Dec-26 13:00:05 GMT', NOW)).toBe(NOW + 5_000);
  });
  it('reads asctime, in GMT whatever the local zone', () => {
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994', NOW)).toBe(at);
    expect(parseHttpDate('Tue Dec 01 13:00:05 2026', NOW)).toBe(NOW + 5_000);
  });
  it.each([
    '',
    '5',
    'soon',
    '2026-12-01T13:00:05Z',
    'Sun, 06 Nov 1994 08:49:37 PST',
    'Sun, 6 Nov 1994 08:49:37 GMT',
    'Sun, 31 Feb 1994 08:49:37 GMT',
    'Sun, 06 Nov 1994 25:49:37 GMT',
    'Sun, 06 Foo 1994 08:49:37 GMT',
  ])('refuses %j', (text) => expect(parseHttpDate(text, NOW)).toBeUndefined());
});

describe('parseRfc3339', () => {
  it.each([
    ['2026-12-01T13:00:05Z', NOW + 5_000],
    ['2026-12-01T13:00:05.250Z', NOW + 5_250],
    ['2026-12-01T14:00:05+01:00', NOW + 5_000],
    ['2026-12-01t13:00:05z', NOW + 5_000],
  ])('reads %j', (text, value) => expect(parseRfc3339(text)).toBe(value));

  it.each(['', '1', '2026-12-01', '2026-12-01T13:00:05', '2026-13-01T13:00:05Z', '2026-12-01T24:00:05Z', 'Tue, 01 Dec 2026 13:00:05 GMT'])(
    'refuses %j',
    (text) => expect(parseRfc3339(text)).toBeUndefined(),
  );
});

describe('parseDuration (OpenAI reset headers)', () => {
  it.each([
    ['6m0s', 360_000],
    ['1s', 1_000],
    ['20ms', 20],
    ['1h2m3.5s', 3_723_500],
    ['0.5s', 500],
    ['2m59.56s', 179_560],
    ['0s', 0],
  ])('reads %j', (text, value) => expect(parseDuration(text)).toBeCloseTo(value, 6));

  it.each(['', '6', 'm', '6x', '-1s', '1s garbage', '1 s', 's1'])('refuses %j', (text) => expect(parseDuration(text)).toBeUndefined());
});
