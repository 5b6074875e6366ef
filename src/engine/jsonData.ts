/**
 * Why `value` is not JSON data that reads back as it was, or `undefined` when it is: strings,
 * finite numbers, booleans, null, arrays and plain objects of them. A property whose value is
 * `undefined` is left out, as JSON leaves it out (reading it back gives `undefined` too); an
 * `undefined` at `path`'s top is no value at all and is allowed as well.
 */
export function jsonProblem(value: unknown, path: string): string | undefined {
  return problemAt(value, path, []);
}

function problemAt(value: unknown, path: string, parents: object[]): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `${path} is ${String(value)}, which JSON cannot hold (it would read back as null)`;
    case 'bigint':
      return `${path} is a bigint, which JSON cannot hold`;
    case 'function':
    case 'symbol':
      return `${path} is a ${typeof value}, which JSON cannot hold`;
  }
  if (value === null) return undefined;
  const object = value as object;
  if (parents.includes(object)) return `${path} refers to an object that holds it (a cycle)`;
  parents.push(object);
  try {
    if (Array.isArray(object)) {
      for (let i = 0; i < object.length; i++) {
        const item: unknown = object[i];
        if (item === undefined) return `${path}[${i}] is undefined, which JSON turns into null`;
        const problem = problemAt(item, `${path}[${i}]`, parents);
        if (problem) return problem;
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(object) as object | null;
    if (proto !== Object.prototype && proto !== null) {
      const kind = (object as { constructor?: { name?: string } }).constructor?.name ?? 'object';
      return `${path} is a ${kind}, not a plain object (JSON would not read it back as it is)`;
    }
    for (const [key, item] of Object.entries(object)) {
      const problem = problemAt(item, `${path}.${key}`, parents);
      if (problem) return problem;
    }
    return undefined;
  } finally {
    parents.pop();
  }
}
