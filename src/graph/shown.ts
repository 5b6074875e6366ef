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
