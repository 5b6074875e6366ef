// The three adapters with what differs between their providers, so that one suite runs against every SDK.
import type { DecideContext } from '../../../src/index.js';
import { systemClock } from '../../../src/kafka/index.js';
import { sdkAdapters, type SdkAdapter } from '../../../tools/providers/sdkAdapters.js';

export interface AdapterCase extends SdkAdapter {
  /** The status this provider reports an overload with. */
  readonly overloadStatus: 503 | 529;
  /** This provider's reset header saying "in `ms`", given the time now. */
  readonly resetHeader: (ms: number, nowMs: number) => Record<string, string>;
  /** Where the JSON mode's schema sits in the request body. */
  readonly schemaInBody: (body: Record<string, unknown>) => unknown;
}

const openaiReset = (ms: number) => ({ 'x-ratelimit-reset-requests': `${ms}ms`, 'x-ratelimit-remaining-requests': '0' });
const openaiSchema = (body: Record<string, unknown>) => (body.response_format as { json_schema?: { schema: unknown } }).json_schema?.schema;

const specifics: Record<SdkAdapter['provider'], Omit<AdapterCase, keyof SdkAdapter>> = {
  openai: { overloadStatus: 503, resetHeader: openaiReset, schemaInBody: openaiSchema },
  anthropic: {
    overloadStatus: 529,
    resetHeader: (ms, nowMs) => ({ 'anthropic-ratelimit-requests-reset': new Date(nowMs + ms).toISOString(), 'anthropic-ratelimit-requests-remaining': '0' }),
    schemaInBody: (body) => (body.output_config as { format?: { schema: unknown } } | undefined)?.format?.schema,
  },
  'ai-sdk': { overloadStatus: 503, resetHeader: openaiReset, schemaInBody: openaiSchema },
};

export const adapterCases: readonly AdapterCase[] = sdkAdapters.map((adapter) => ({ ...adapter, ...specifics[adapter.provider] }));

/** A decide context on the system clock, as the engine gives it. */
export function decideContext(signal: AbortSignal = new AbortController().signal): DecideContext {
  return {
    key: 'k',
    effectId: 'requests/0/0',
    attempt: 1,
    record: { topic: 'requests', partition: 0, offset: 0, timestampMs: 0, headers: {} },
    previousErrors: [],
    decisions: {},
    clock: systemClock,
    signal,
    status: () => Promise.resolve(),
    reportTokens: () => undefined,
    step: (name, fn) => Promise.resolve(fn({ effectId: 'requests/0/0', step: name, signal })),
  };
}
