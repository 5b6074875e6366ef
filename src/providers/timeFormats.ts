// The time formats of rate-limit headers, each parsed strictly: a value that does not match its
// form is undefined, never a guess (Date.parse accepts '1' or 'soon-ish' as dates).

/** A non-negative decimal number, as `retry-after-ms` and `retry-after` delay-seconds carry. */
export function parseDecimal(value: string): number | undefined {
  const trimmed = value.trim();
  return /^\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) : undefined;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
// RFC 9110 §5.6.7: IMF-fixdate, and the two obsolete forms a recipient must still accept.
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/**
 * An HTTP date (RFC 9110 §5.6.7) as epoch milliseconds: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37
 * GMT`), the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6
 * 08:49:37 1994`), all in GMT. A two-digit year more than 50 years ahead of `nowMs` is taken to be
 * in the past century, as RFC 9110 asks.
 */
export function parseHttpDate(value: string, nowMs: number): number | undefined {
  const text = value.trim();
  let m = IMF_FIXDATE.exec(text);
  if (m) return utc(Number(m[3]), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  m = RFC850_DATE.exec(text);
  if (m) return utc(fullYear(Number(m[3]), nowMs), m[2]!, Number(m[1]), m[4]!, m[5]!, m[6]!);
  m = ASCTIME_DATE.exec(text);
  if (m) return utc(Number(m[6]), m[1]!, Number(m[2]!.trim()), m[3]!, m[4]!, m[5]!);
  return undefined;
}

function fullYear(twoDigits: number, nowMs: number): number {
  const year = 2000 + twoDigits;
  return year > new Date(nowMs).getUTCFullYear() + 50 ? year - 100 : year;
}

function utc(year: number, month: string, day: number, h: string, min: string, s: string): number | undefined {
  const ms = Date.UTC(year, MONTHS.indexOf(month), day, Number(h), Number(min), Number(s));
  // 31 Feb and 25:00 roll over in Date.UTC: refuse them instead.
  const back = new Date(ms);
  if (back.getUTCDate() !== day || back.getUTCHours() !== Number(h) || Number(min) > 59 || Number(s) > 60) return undefined;
  return ms;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** An RFC 3339 date-time (`2026-12-01T13:05:43Z`, with a fraction or an offset) as epoch milliseconds. */
export function parseRfc3339(value: string): number | undefined {
  const text = value.trim();
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  if (Number(m[2]) < 1 || Number(m[2]) > 12 || Number(m[3]) < 1 || Number(m[3]) > 31) return undefined;
  if (Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 60) return undefined;
  const ms = Date.parse(text.replace(' ', 'T'));
  return Number.isNaN(ms) ? undefined : ms;
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 0.001, µs: 0.001, ns: 0.000_001 };
const DURATION = /^(?:\d+(?:\.\d+)?(?:h|ms|m|s|us|µs|ns))+$/;
const DURATION_PART = /(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g;

/** A duration as OpenAI's reset headers write it (Go's form: `6m0s`, `1s`, `20ms`, `1h2m3.5s`), in milliseconds. */
export function parseDuration(value: string): number | undefined {
  const text = value.trim();
  if (!DURATION.test(text)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(DURATION_PART)) ms += Number(amount) * DURATION_UNITS_MS[unit!]!;
  return ms;
}
