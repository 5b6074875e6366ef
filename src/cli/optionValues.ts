import { InvalidArgumentError } from 'commander';
import { FORMAT_3_NOT_WRITTEN } from '../state/storedFormat.js';

// Parsers of command-line option values, shared by every command so that one kind of value is
// checked, and refused, one way.

/** A whole number of at least 1 (a count, an interval). */
export function toPositive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a whole number of at least 1, got '${value}'`);
  return n;
}

/** A whole number, 0 or more (a size in bytes, say). */
export function toWholeNumber(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`expected a whole number, 0 or more, got '${value}'`);
  return n;
}

/** A whole number of milliseconds, 0 or more. */
export function toMilliseconds(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`expected a whole number of milliseconds, 0 or more, got '${value}'`);
  return n;
}

/** A partition number. */
export function toPartition(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`a partition is a whole number of at least 0, got '${value}'`);
  return n;
}

/** A TCP port to listen on (0: any free port). */
export function toPort(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError(`expected a port from 0 to 65535, got '${value}'`);
  return n;
}

/** A repeatable option's values, in order. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** A repeatable `key=value` librdkafka property. */
export function collectProperty(pair: string, previous: Record<string, string>): Record<string, string> {
  const at = pair.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError(`a librdkafka property needs key=value, got '${pair}'`);
  return { ...previous, [pair.slice(0, at)]: pair.slice(at + 1) };
}

/** A stored format a worker may write: 2 or 3. */
export function toStoredFormat(value: string): 2 | 4 {
  if (value === '3') throw new InvalidArgumentError(FORMAT_3_NOT_WRITTEN);
  if (value !== '2' && value !== '4') throw new InvalidArgumentError(`a stored format this orderly writes is 2 or 4, got '${value}'`);
  return Number(value) as 2 | 4;
}

/** pino's levels, from the quietest that logs to the most verbose, and `silent`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** A pino log level. */
export function toLogLevel(value: string): string {
  if (!(LOG_LEVELS as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${LOG_LEVELS.join(', ')}, got '${value}'`);
  return value;
}
