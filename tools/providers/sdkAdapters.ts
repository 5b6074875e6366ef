// Each provider adapter on its real SDK, pointed at a stand-in server: for the adapters' tests
// and `npm run providers:check`.
import { createRequire } from 'node:module';
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import OpenAI from 'openai';
import type { DecideContext, DecideFn } from '../../src/index.js';
import { aiSdkDecide } from '../../src/providers/aiSdk.js';
import { anthropicDecide } from '../../src/providers/anthropic.js';
import type { DecisionSchema } from '../../src/providers/jsonSchemaOf.js';
import { openaiDecide } from '../../src/providers/openai.js';
import type { ProviderOptions } from '../../src/providers/providerDecide.js';
import type { StandInApi } from './standInServer.js';

/** The event every stand-in run decides. */
export interface StandInEvent {
  readonly id: string;
}

/** A decide function whose answer is always a promise (the adapters' are). */
export type Decide = (event: StandInEvent, ctx: DecideContext) => Promise<unknown>;

export interface SdkAdapter {
  readonly provider: 'openai' | 'anthropic' | 'ai-sdk';
  /** Which of the stand-in server's APIs the SDK talks to. */
  readonly api: StandInApi;
  /** The SDK packages and their installed versions. */
  readonly packages: Readonly<Record<string, string>>;
  /**
   * The adapter on a client of the SDK at `baseUrl` (the stand-in's, ending in /v1). `clientMaxRetries`
   * sets the client's own retries (openai, anthropic); unset, the SDK's default (2) stands.
   */
  make(baseUrl: string, options: ProviderOptions & { schema?: DecisionSchema }, clientMaxRetries?: number): Decide;
}

const require = createRequire(import.meta.url);
const versionOf = (name: string) => (require(`${name}/package.json`) as { version: string }).version;
const promised =
  (decide: DecideFn<StandInEvent, unknown>): Decide =>
  (event, ctx) =>
    Promise.resolve(decide(event, ctx));
const messages = (event: StandInEvent) => [{ role: 'user' as const, content: JSON.stringify(event) }];
const retries = (n: number | undefined) => (n === undefined ? {} : { maxRetries: n });

export const sdkAdapters: readonly SdkAdapter[] = [
  {
    provider: 'openai',
    api: 'openai',
    packages: { openai: (require('openai/version') as { VERSION: string }).VERSION },
    make: (baseUrl, options, n) =>
      promised(openaiDecide(new OpenAI({ apiKey: 'stand-in', baseURL: baseUrl, ...retries(n) }), { ...options, model: 'gpt-stand-in', messages })),
  },
  {
    provider: 'anthropic',
    api: 'anthropic',
    packages: { '@anthropic-ai/sdk': (require('@anthropic-ai/sdk/version') as { VERSION: string }).VERSION },
    make: (baseUrl, options, n) =>
      promised(
        anthropicDecide(new Anthropic({ apiKey: 'stand-in', baseURL: baseUrl.replace(/\/v1$/, ''), ...retries(n) }), {
          ...options,
          model: 'claude-stand-in',
          messages,
        }),
      ),
  },
  {
    provider: 'ai-sdk',
    api: 'openai',
    packages: { ai: versionOf('ai'), '@ai-sdk/openai': versionOf('@ai-sdk/openai') },
    // The AI SDK's retries are per call (default 2), so the adapter's maxRetries: 0 is all there is.
    make: (baseUrl, options) =>
      promised(aiSdkDecide({ ...options, model: createOpenAI({ apiKey: 'stand-in', baseURL: baseUrl }).chat('gpt-stand-in'), messages })),
  },
];
