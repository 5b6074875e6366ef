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

/** Asserts a function argument. */
export function requireFunction(operator: string, what: string, value: unknown): void {
  if (typeof value !== 'function') {
    throw new TopologyError(operator, `${operator}: ${what} must be a function, got ${typeof value}`);
  }
}

/**
 * An option's value as the user wrote it, for an error: NaN, Infinity, -0 and undefined as such
 * (JSON.stringify would print null, null, 0 and nothing), a string in quotes, a function by name.
 */
export function shown(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Object.is(value, -0) ? '-0' : String(value);
    case 'bigint':
      return `${value}n`;
    case 'undefined':
    case 'boolean':
    case 'symbol':
      return String(value);
    case 'function':
      return value.name ? `the function '${value.name}'` : 'a function';
    default:
      try {
        const json = JSON.stringify(value) as string | undefined;
        if (json === undefined) return 'an object';
        return json.length <= 80 ? json : `${json.slice(0, 77)}...`;
      } catch {
        return Array.isArray(value) ? 'an array' : 'an object';
      }
  }
}
