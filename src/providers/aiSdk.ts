// orderly/providers/ai-sdk: an agent step's decide function on the AI SDK (`ai`) and any of its providers.
import { APICallError, generateText, jsonSchema, Output, RetryError, type LanguageModel, type ModelMessage } from 'ai';
import type { DecideContext, DecideFn } from '../graph/nodes.js';
import { jsonSchemaOf, type DecisionSchema } from './jsonSchemaOf.js';
import { providerDecide, type HttpFailure, type ProviderOptions } from './providerDecide.js';

export type { ProviderCall, ProviderOptions, TokenUsage } from './providerDecide.js';
export type { TokenLimit } from '../engine/tokenPacer.js';
export { ProviderOverloaded } from './providerOverloaded.js';

type GenerateTextOptions = Parameters<typeof generateText>[0];

/** What {@link aiSdkDecide} asks the model. */
export interface AiSdkDecideOptions<T> extends ProviderOptions {
  /** The model, such as `createOpenAI()('gpt-4o-mini')`. */
  readonly model: LanguageModel;
  /** The conversation for one event. */
  readonly messages: (event: T, ctx: DecideContext) => ModelMessage[];
  /** The system prompt. */
  readonly system?: string;
  /**
   * The decision's shape: the answer comes through `Output.object` (the provider's structured
   * output). Without it, `Output.json()`: any JSON, so the prompt must describe it. The step's own
   * schema validates the answer either way.
   */
  readonly schema?: DecisionSchema;
  /** Further call settings (temperature, maxOutputTokens, providerOptions, …). */
  readonly request?: Omit<Partial<GenerateTextOptions>, 'model' | 'messages' | 'prompt' | 'system' | 'output' | 'maxRetries' | 'abortSignal'>;
}

/**
 * An agent step's decide function that asks an AI SDK language model for a JSON decision.
 *
 * Each call passes `maxRetries: 0` (the AI SDK retries per call, 2 by default, from 2 s up): the
 * engine owns backpressure. An `APICallError` with status 429 becomes `RateLimited` with the delay
 * of `retry-after-ms`, `retry-after` or the provider's reset headers (else `rateLimitedDelayMs`),
 * unless it says the request itself is over the limit (a failed attempt);
 * a 503 or 529 is waited out and failed as `ProviderOverloaded`; anything else is a failed attempt.
 * A `RetryError` (should the SDK retry anyway) is judged by its last error.
 *
 * @example
 * ```ts
 * const openai = createOpenAI();
 * const decide = aiSdkDecide<Dispute>({
 *   model: openai.chat('gpt-4o-mini'),
 *   schema: Decision,
 *   messages: (d) => [{ role: 'user', content: JSON.stringify(d) }],
 * });
 * ```
 */
export function aiSdkDecide<T>(options: AiSdkDecideOptions<T>): DecideFn<T, unknown> {
  const output = options.schema ? Output.object({ schema: jsonSchema(jsonSchemaOf('ai-sdk', options.schema)) }) : Output.json();
  return providerDecide<T>(
    {
      provider: 'ai-sdk',
      async send(event, ctx) {
        const result = await generateText({
          ...options.request,
          model: options.model,
          messages: options.messages(event, ctx),
          ...(options.system !== undefined ? { system: options.system } : {}),
          output,
          maxRetries: 0,
          abortSignal: ctx.signal,
        });
        const { inputTokens, outputTokens, totalTokens } = result.usage;
        return { decision: result.output, headers: result.response.headers, usage: { inputTokens, outputTokens, totalTokens } };
      },
      failureOf: apiCallFailureOf,
    },
    options,
  );
}

function apiCallFailureOf(error: unknown): HttpFailure | undefined {
  const last = RetryError.isInstance(error) ? error.lastError : error;
  if (!APICallError.isInstance(last) || last.statusCode === undefined) return undefined;
  return { status: last.statusCode, headers: last.responseHeaders };
}
