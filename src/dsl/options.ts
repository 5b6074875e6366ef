import { shown } from '../graph/shown.js';
import { TopologyError } from './topologyError.js';

/** Asserts an integer option is at least `min`, naming the operator and the option. */
export function requireInteger(operator: string, option: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new TopologyError(operator, `${operator}: ${option} must be a whole number of at least ${min}, got ${shown(value)}`);
  }
  return value;
}

/** Asserts a number option lies in [min, max]. */
export function requireNumber(operator: string, option: string, value: unknown, min: number, max = Infinity): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    const range = max === Infinity ? `at least ${min}` : `between ${min} and ${max}`;
    throw new TopologyError(operator, `${operator}: ${option} must be a number ${range}, got ${shown(value)}`);
  }
  return value;
}

/** Asserts a name is a non-empty string fit for topic and store names. */
export function requireName(operator: string, what: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9._-]+$/.test(value)) {
    throw new TopologyError(operator, `${operator}: ${what} must be a non-empty string of letters, digits, '.', '_' or '-', got ${shown(value)}`);
  }
  return value;
}

/**
 * Asserts an options object names only options the operator has: in plain JavaScript a misspelt
 * option (`maxInFlite`) would otherwise be ignored, and its default taken without a word.
 */
export function requireKnownOptions(operator: string, options: unknown, known: readonly string[], prefix = ''): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TopologyError(operator, `${operator}: ${prefix ? prefix.slice(0, -1) : 'its options'} must be an object, got ${shown(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const near = nearest(key, known);
    throw new TopologyError(
      operator,
      `${operator}: unknown option '${prefix}${key}'${near ? ` (did you mean '${prefix}${near}'?)` : ''}; its options are ${known.map((k) => `${prefix}${k}`).join(', ')}`,
    );
  }
}

/** The known option `key` begins (`deadLetter`), else the closest by edit distance if it is close (a typo, a case slip). */
export function nearest(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  const begun = known.find((candidate) => candidate.toLowerCase().startsWith(lower));
  if (begun !== undefined && key.length >= 3) return begun;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = distance(key.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

/** Levenshtein distance, on one row. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/** Asserts a function argument. */
export function requireFunction(operator: string, what: string, value: unknown): void {
  if (typeof value !== 'function') {
    throw new TopologyError(operator, `${operator}: ${what} must be a function, got ${typeof value}`);
  }
}
