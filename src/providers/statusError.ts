import type { HttpFailure } from './providerDecide.js';

/**
 * The response behind an openai or @anthropic-ai/sdk `APIError`: both carry `status` and a fetch
 * `Headers`. Connection errors and aborts have no status.
 */
export function statusErrorOf(error: unknown): HttpFailure | undefined {
  const { status, headers } = (error ?? {}) as { status?: unknown; headers?: unknown };
  if (typeof status !== 'number') return undefined;
  const hasGet = typeof (headers as { get?: unknown } | undefined)?.get === 'function';
  return { status, headers: hasGet ? (headers as Headers) : undefined };
}
