/**
 * Response headers as the SDKs hand them over: a fetch `Headers` (openai, @anthropic-ai/sdk) or a
 * plain object with lower-case names (the `ai` SDK's `responseHeaders`).
 */
export type HeaderSource = { get(name: string): string | null } | Readonly<Record<string, string | undefined>>;

/** The value of header `name` (lower case), or undefined when it is absent. */
export function headerOf(headers: HeaderSource | undefined | null, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  return (headers as Readonly<Record<string, string | undefined>>)[name] ?? undefined;
}
