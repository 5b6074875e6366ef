import type { Resolution } from './parkedKeys.js';

const KINDS = ['decision', 'retry', 'discard'] as const;

/**
 * Returns `value` as a {@link Resolution} when it is exactly one of `{ decision }`,
 * `{ retry: true }` and `{ discard: true }`; otherwise throws naming `what` and what it got.
 * An empty or mixed resolution would otherwise do nothing, or something the person did not mean.
 */
export function checkResolution(what: string, value: unknown): Resolution {
  const problem = resolutionProblem(value);
  if (problem) {
    throw new TypeError(`${what}: a resolution must be exactly one of { decision: ... }, { retry: true } and { discard: true }; ${problem}`);
  }
  return value as Resolution;
}

function resolutionProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return `got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`;
  const keys = Object.keys(value);
  const unknown = keys.filter((k) => !(KINDS as readonly string[]).includes(k));
  if (unknown.length > 0) return `got unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => `'${k}'`).join(', ')}`;
  if (keys.length !== 1) return keys.length === 0 ? 'got {}' : `got ${keys.map((k) => `'${k}'`).join(' and ')} together`;
  const r = value as Record<string, unknown>;
  if ('decision' in r) return r.decision === undefined ? 'got a decision of undefined' : undefined;
  const kind = keys[0]!;
  return r[kind] === true ? undefined : `got { ${kind}: ${JSON.stringify(r[kind])} }; write { ${kind}: true }`;
}
