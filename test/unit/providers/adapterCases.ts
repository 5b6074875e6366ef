// The three adapters, each bound to a stand-in server, so that one suite runs against every SDK.
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import OpenAI from 'openai';
import type { DecideContext, DecideFn } from '../../../src/index.js';
import { systemClock } from '../../../src/index.js';
import { aiSdkDecide } from '../../../src/providers/aiSdk.js';
import { anthropicDecide } from '../../../src/providers/anthropic.js';
import type { DecisionSchema } from '../../../src/providers/jsonSchemaOf.js';
import { openaiDecide } from '../../../src/providers/openai.js';
import type { ProviderOptions } from '../../../src/providers/providerDecide.js';
import type { StandInApi } from '../../../tools/providers/standInServer.js';

export interface AdapterCase {
  readonly name: string;
  readonly api: StandInApi;
  /** The status this provider reports an overload with. */
  readonly overloadStatus: 503 | 529;
  /** A reset header of this provider that says "in `ms`", given the time now. */
  readonly resetHeader: (ms: number, nowMs: number) => Record<string, string>;
  /** Where the JSON mode's schema sits in the request body. */
  readonly schemaInBody: (body: Record<string, unknown>) => unknown;
  /** A decide function on a client whose own retries are on (3), to show the adapter turns them off. */
  make(baseUrl: string, options: ProviderOptions & { schema?: DecisionSchema }): DecideFn<{ id: string }, unknown>;
}

const messages = (event: { id: string }) => [{ role: 'user' as const, content: JSON.stringify(event) }];

export const adapterCases: readonly AdapterCase[] = [
  {
    name: 'openai',
    api: 'openai',
    overloadStatus: 503,
    resetHeader: (ms) => ({ 'x-ratelimit-reset-requests': `${ms}ms`, 'x-ratelimit-remaining-requests': '0' }),
    schemaInBody: (body) => (body.response_format as { json_schema?: { schema: unknown } }).json_schema?.schema,
    make: (baseUrl, options) => openaiDecide(new OpenAI({ apiKey: 'test', baseURL: baseUrl, maxRetries: 3 }), { ...options, model: 'gpt-test', messages }),
  },
  {
    name: 'anthropic',
    api: 'anthropic',
    overloadStatus: 529,
    resetHeader: (ms, nowMs) => ({ 'anthropic-ratelimit-requests-reset': new Date(nowMs + ms).toISOString(), 'anthropic-ratelimit-requests-remaining': '0' }),
    schemaInBody: (body) => (body.output_config as { format?: { schema: unknown } } | undefined)?.format?.schema,
    make: (baseUrl, options) =>
      anthropicDecide(new Anthropic({ apiKey: 'test', baseURL: baseUrl.replace(/\/v1$/, ''), maxRetries: 3 }), { ...options, model: 'claude-test', messages }),
  },
  {
    name: 'ai-sdk',
    api: 'openai',
    overloadStatus: 503,
    resetHeader: (ms) => ({ 'x-ratelimit-reset-requests': `${ms}ms`, 'x-ratelimit-remaining-requests': '0' }),
    schemaInBody: (body) => (body.response_format as { json_schema?: { schema: unknown } }).json_schema?.schema,
    make: (baseUrl, options) => aiSdkDecide({ ...options, model: createOpenAI({ apiKey: 'test', baseURL: baseUrl }).chat('gpt-test'), messages }),
  },
];

/** A decide context on the system clock, as the engine gives it. */
export function decideContext(signal: AbortSignal = new AbortController().signal): DecideContext {
  return {
    key: 'k',
    effectId: 'requests/0/0',
    attempt: 1,
    record: { topic: 'requests', partition: 0, offset: 0, timestampMs: 0, headers: {} },
    previousErrors: [],
    clock: systemClock,
    signal,
  };
}
