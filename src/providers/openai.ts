// orderly/providers/openai: an agent step's decide function on the openai SDK's chat completions.
import type OpenAI from 'openai';
import type { DecideContext, DecideFn } from '../graph/nodes.js';
import { decisionFromText } from './decisionText.js';
import { jsonSchemaOf, type DecisionSchema } from './jsonSchemaOf.js';
import { providerDecide, type ProviderOptions } from './providerDecide.js';
import { statusErrorOf } from './statusError.js';

export type { ProviderCall, ProviderOptions, TokenUsage } from './providerDecide.js';
export type { TokenLimit } from '../engine/tokenPacer.js';
export { ProviderOverloaded } from './providerOverloaded.js';

type ChatParams = OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;

/** What {@link openaiDecide} asks the model. */
export interface OpenAIDecideOptions<T> extends ProviderOptions {
  /** The model id, such as `gpt-4o-mini`. */
  readonly model: string;
  /** The conversation for one event: its system and user messages. */
  readonly messages: (event: T, ctx: DecideContext) => ChatParams['messages'];
  /**
   * The decision's shape: the answer comes in structured-output mode (`json_schema`, strict). Without
   * it, plain JSON mode (`json_object`): then the messages must ask for JSON. The step's own
   * schema validates the answer either way.
   */
  readonly schema?: DecisionSchema;
  /** The name the structured-output format is given. @defaultValue 'decision' */
  readonly schemaName?: string;
  /**
   * Strict structured outputs: the model's answer always follows the schema, which must then have
   * every property required and no additional ones (what OpenAI's strict mode accepts). @defaultValue true
   */
  readonly strict?: boolean;
  /** Further request parameters (temperature, max_completion_tokens, …). */
  readonly request?: Omit<Partial<ChatParams>, 'model' | 'messages' | 'response_format' | 'stream'>;
}

/**
 * An agent step's decide function that asks an OpenAI chat model for a JSON decision.
 *
 * Every request is sent with `maxRetries: 0`, whatever the client's setting: the engine owns
 * backpressure, and the SDK's own retries would hide 429s from it and spend the budget twice.
 * A 429 (`RateLimitError`) becomes `RateLimited` with the delay of `retry-after-ms`, `retry-after`
 * or `x-ratelimit-reset-requests` / `-tokens` (else `rateLimitedDelayMs`), unless it says the request
 * itself is over the limit ("Request too large ...": a failed attempt); a 503 is waited out and
 * failed as `ProviderOverloaded`; any other error is a failed attempt.
 *
 * @example
 * ```ts
 * const client = new OpenAI();
 * const decide = openaiDecide<Dispute>(client, {
 *   model: 'gpt-4o-mini',
 *   schema: Decision,
 *   messages: (d) => [{ role: 'system', content: 'Decide the dispute.' }, { role: 'user', content: JSON.stringify(d) }],
 * });
 * stream<Dispute>('disputes', { value: json() }).keyedSerial().agentStep('decide', decide, { schema: Decision })
 * ```
 */
export function openaiDecide<T>(client: OpenAI, options: OpenAIDecideOptions<T>): DecideFn<T, unknown> {
  const responseFormat: ChatParams['response_format'] = options.schema
    ? {
        type: 'json_schema',
        json_schema: { name: options.schemaName ?? 'decision', schema: jsonSchemaOf('openai', options.schema), strict: options.strict ?? true },
      }
    : { type: 'json_object' };
  return providerDecide<T>(
    {
      provider: 'openai',
      async send(event, ctx) {
        const body: ChatParams = { ...options.request, model: options.model, messages: options.messages(event, ctx), response_format: responseFormat };
        const { data, response } = await client.chat.completions.create(body, { maxRetries: 0, signal: ctx.signal }).withResponse();
        const message = data.choices[0]?.message;
        if (message?.refusal) throw new Error(`openai: the model refused to decide: ${message.refusal}`);
        const usage = data.usage && { inputTokens: data.usage.prompt_tokens, outputTokens: data.usage.completion_tokens, totalTokens: data.usage.total_tokens };
        return { decision: decisionFromText('openai', message?.content), headers: response.headers, usage };
      },
      failureOf: statusErrorOf,
    },
    options,
  );
}
