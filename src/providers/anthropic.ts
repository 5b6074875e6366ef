// orderly/providers/anthropic: an agent step's decide function on the @anthropic-ai/sdk Messages API.
import type Anthropic from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming } from '@anthropic-ai/sdk/resources/messages';
import type { DecideContext, DecideFn } from '../graph/nodes.js';
import { decisionFromText } from './decisionText.js';
import { jsonSchemaOf, type DecisionSchema } from './jsonSchemaOf.js';
import { providerDecide, type ProviderOptions } from './providerDecide.js';
import { statusErrorOf } from './statusError.js';

export type { ProviderCall, ProviderOptions, TokenUsage } from './providerDecide.js';
export type { TokenLimit } from '../engine/tokenPacer.js';
export { ProviderOverloaded } from './providerOverloaded.js';

/** What {@link anthropicDecide} asks the model. */
export interface AnthropicDecideOptions<T> extends ProviderOptions {
  /** The model id, such as `claude-haiku-4-5`. */
  readonly model: string;
  /** The user (and assistant) turns for one event. */
  readonly messages: (event: T, ctx: DecideContext) => MessageCreateParamsNonStreaming['messages'];
  /** The system prompt. */
  readonly system?: string;
  /** @defaultValue 1024 */
  readonly maxTokens?: number;
  /**
   * The decision's shape: the answer comes in structured-output mode (`output_config.format`,
   * `json_schema`). Without it the model's text is parsed as JSON, so the prompt must ask for JSON.
   * The step's own schema validates the answer either way.
   */
  readonly schema?: DecisionSchema;
  /** Further request parameters (temperature, metadata, …). */
  readonly request?: Omit<Partial<MessageCreateParamsNonStreaming>, 'model' | 'messages' | 'system' | 'max_tokens' | 'stream'>;
}

/**
 * An agent step's decide function that asks a Claude model for a JSON decision.
 *
 * Every request is sent with `maxRetries: 0`, whatever the client's setting: the engine owns
 * backpressure. A 429 (`RateLimitError`) becomes `RateLimited` with the delay of `retry-after-ms`,
 * `retry-after` or `anthropic-ratelimit-requests-reset` / `-tokens-reset` (else
 * `rateLimitedDelayMs`), unless it says the request itself is over the limit (a failed attempt);
 * a 529 (`OverloadedError`) or 503 is waited out and failed as
 * `ProviderOverloaded`; any other error is a failed attempt.
 *
 * @example
 * ```ts
 * const client = new Anthropic();
 * const decide = anthropicDecide<Dispute>(client, {
 *   model: 'claude-haiku-4-5',
 *   system: 'Decide the dispute.',
 *   schema: Decision,
 *   messages: (d) => [{ role: 'user', content: JSON.stringify(d) }],
 * });
 * ```
 */
export function anthropicDecide<T>(client: Anthropic, options: AnthropicDecideOptions<T>): DecideFn<T, unknown> {
  const outputConfig: MessageCreateParamsNonStreaming['output_config'] | undefined = options.schema
    ? { ...options.request?.output_config, format: { type: 'json_schema', schema: jsonSchemaOf('anthropic', options.schema) } }
    : options.request?.output_config;
  return providerDecide<T>(
    {
      provider: 'anthropic',
      async send(event, ctx) {
        const body: MessageCreateParamsNonStreaming = {
          ...options.request,
          model: options.model,
          max_tokens: options.maxTokens ?? 1024,
          messages: options.messages(event, ctx),
          ...(options.system !== undefined ? { system: options.system } : {}),
          ...(outputConfig ? { output_config: outputConfig } : {}),
        };
        const { data, response } = await client.messages.create(body, { maxRetries: 0, signal: ctx.signal }).withResponse();
        const text = data.content.find((block) => block.type === 'text');
        const { input_tokens: inputTokens, output_tokens: outputTokens } = data.usage;
        return {
          decision: decisionFromText('anthropic', text?.type === 'text' ? text.text : undefined),
          headers: response.headers,
          usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
        };
      },
      failureOf: statusErrorOf,
    },
    options,
  );
}
