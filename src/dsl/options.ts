import { optionsProblem } from '../graph/optionNames.js';
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
  const problem = optionsProblem(options, known, prefix);
  if (problem !== undefined) throw new TopologyError(operator, `${operator}: ${problem}`);
}

/** Asserts a function argument. */
export function requireFunction(operator: string, what: string, value: unknown): void {
  if (typeof value !== 'function') {
    throw new TopologyError(operator, `${operator}: ${what} must be a function, got ${typeof value}`);
  }
}
