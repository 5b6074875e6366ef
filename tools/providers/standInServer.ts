// A stand-in for the providers' HTTP APIs on 127.0.0.1 (node:http), for the provider adapters'
// tests and `npm run providers:check`: OpenAI's chat completions (POST /v1/chat/completions) and
// Anthropic's Messages API (POST /v1/messages), with their bodies, rate-limit headers and error
// shapes. It counts every request, so a test can prove that no SDK retried on its own.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FixedWindow } from './fixedWindow.js';

export type StandInApi = 'openai' | 'anthropic';

/** A request as the server saw it. */
export interface StandInRequest {
  readonly api: StandInApi;
  readonly atMs: number;
  readonly body: Record<string, unknown>;
  /** The text of the last user message. */
  readonly prompt: string;
  /** The status it was answered with. */
  status?: number;
}

/** How to answer one request: a decision (200) or an error status, with extra headers. */
export type StandInReply =
  | { readonly status: 200; readonly decision?: unknown; readonly text?: string; readonly headers?: Record<string, string> }
  | { readonly status: 400 | 429 | 500 | 503 | 529; readonly headers?: Record<string, string>; readonly message?: string };

export interface StandInOptions {
  /** The decision for a prompt (the JSON the model would write). */
  readonly decide: (prompt: string) => unknown;
  /** A scripted answer for a request; undefined: the window's rule, else a decision. */
  readonly reply?: (request: StandInRequest, index: number) => StandInReply | undefined;
  /** The provider's budget: past `calls` in a fixed window of `windowMs`, a 429 until the window ends. */
  readonly window?: { readonly calls: number; readonly windowMs: number };
  /** The provider's token budget: past `tokens` (input and output) in a fixed window of `windowMs`, a 429 until it ends. */
  readonly tokenWindow?: { readonly tokens: number; readonly windowMs: number };
  /** How long each answer takes. @defaultValue 0 */
  readonly latencyMs?: number;
}

/** A 429 the window answered, and when its window ends. */
export interface StandInRefusal {
  readonly atMs: number;
  readonly untilMs: number;
}

export interface StandInServer {
  /** The base URL for the SDK's `baseURL` option (ends in `/v1`). */
  readonly baseUrl: string;
  readonly requests: readonly StandInRequest[];
  readonly refusals: readonly StandInRefusal[];
  close(): Promise<void>;
}

interface Budget {
  readonly limit: number;
  readonly remaining: number;
  readonly resetMs: number;
}
interface Budgets {
  readonly calls: Budget;
  readonly tokens: Budget;
}

/** The tokens a call uses: a rough count of its prompt (and a fixed overhead) and its answer. */
function tokensOf(prompt: string, text: string): { input: number; output: number } {
  return { input: Math.ceil(prompt.length / 4) + 10, output: Math.ceil(text.length / 4) };
}

export async function startStandInServer(options: StandInOptions): Promise<StandInServer> {
  const requests: StandInRequest[] = [];
  const refusals: StandInRefusal[] = [];
  const calls = new FixedWindow(options.window?.calls ?? 1_000, options.window?.windowMs ?? 60_000);
  const tokens = new FixedWindow(options.tokenWindow?.tokens ?? 100_000, options.tokenWindow?.windowMs ?? 60_000);

  /** The budgets' verdict on a call that would use `used` tokens: a 429 from the first that has no room. */
  const budgetReply = (api: StandInApi, nowMs: number, used: number): { reply: StandInReply; budgets: Budgets } => {
    const call = calls.take(nowMs, 1);
    const token = call.taken ? tokens.take(nowMs, used) : tokens.peek(nowMs);
    if (call.taken && !token.taken) calls.giveBack(1);
    const budgets = { calls: { limit: calls.limit, ...call }, tokens: { limit: tokens.limit, ...token } };
    if (call.taken && token.taken) return { reply: { status: 200 }, budgets };
    const resetMs = call.taken ? token.resetMs : call.resetMs;
    refusals.push({ atMs: nowMs, untilMs: nowMs + resetMs });
    return { reply: { status: 429, headers: retryHeaders(api, resetMs) }, budgets };
  };

  const handle = (api: StandInApi, res: ServerResponse, raw: string) => {
    const nowMs = Date.now();
    const body = JSON.parse(raw) as Record<string, unknown>;
    const request: StandInRequest = { api: api, atMs: nowMs, body, prompt: promptOf(body) };
    requests.push(request);
    const scripted = options.reply?.(request, requests.length - 1);
    const text =
      scripted?.status === 200 && scripted.text !== undefined
        ? scripted.text
        : JSON.stringify((scripted?.status === 200 && scripted.decision) || options.decide(request.prompt));
    const usage = tokensOf(request.prompt, text);
    const { reply, budgets } = scripted ? { reply: scripted, budgets: undefined } : budgetReply(api, nowMs, usage.input + usage.output);
    // A scripted refusal carries only the headers the script gives it (and a request id).
    const budgetHeaders = budgets ? limitHeaders(api, nowMs, budgets) : requestId(api, nowMs);
    const headers = { 'content-type': 'application/json', ...budgetHeaders, ...reply.headers };
    request.status = reply.status;
    const answer = reply.status === 200 ? success(api, body, text, usage) : failure(api, reply.status, reply.message);
    const send = () => {
      res.writeHead(reply.status, headers);
      res.end(JSON.stringify(answer));
    };
    if (options.latencyMs) setTimeout(send, options.latencyMs);
    else send();
  };

  const server = createServer((req, res) => {
    const api: StandInApi | undefined =
      req.method !== 'POST' ? undefined : req.url === '/v1/chat/completions' ? 'openai' : req.url === '/v1/messages' ? 'anthropic' : undefined;
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      if (!api) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      handle(api, res, raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    refusals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function promptOf(body: Record<string, unknown>): string {
  const messages = (body.messages ?? []) as Array<{ role: string; content: unknown }>;
  const last = [...messages].reverse().find((m) => m.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  return (last.content as Array<{ type: string; text?: string }>)
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('');
}

function success(api: StandInApi, body: Record<string, unknown>, text: string, usage: { input: number; output: number }): unknown {
  const { input, output } = usage;
  if (api === 'openai') {
    return {
      id: `chatcmpl-${Math.random().toString(36).slice(2)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1_000),
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, finish_reason: 'stop', logprobs: null }],
      usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output },
    };
  }
  return {
    id: `msg_${Math.random().toString(36).slice(2)}`,
    type: 'message',
    role: 'assistant',
    model: body.model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: input, output_tokens: output },
  };
}

const ERRORS: Record<number, { openai: [string, string]; anthropic: string }> = {
  400: { openai: ['invalid_request_error', 'invalid_request'], anthropic: 'invalid_request_error' },
  429: { openai: ['requests', 'rate_limit_exceeded'], anthropic: 'rate_limit_error' },
  500: { openai: ['server_error', 'server_error'], anthropic: 'api_error' },
  503: { openai: ['server_error', 'overloaded'], anthropic: 'api_error' },
  529: { openai: ['server_error', 'overloaded'], anthropic: 'overloaded_error' },
};

function failure(api: StandInApi, status: number, message = `stand-in ${status}`): unknown {
  const kind = ERRORS[status]!;
  if (api === 'openai') return { error: { message, type: kind.openai[0], param: null, code: kind.openai[1] } };
  return { type: 'error', error: { type: kind.anthropic, message } };
}

function requestId(api: StandInApi, nowMs: number): Record<string, string> {
  return { [api === 'openai' ? 'x-request-id' : 'request-id']: `req_${nowMs}` };
}

/** The budget headers each provider sends on every response. */
function limitHeaders(api: StandInApi, nowMs: number, budgets: Budgets): Record<string, string> {
  const { calls, tokens } = budgets;
  if (api === 'openai') {
    const duration = (ms: number) => `${Math.max(0, Math.ceil(ms))}ms`;
    return {
      ...requestId(api, nowMs),
      'x-ratelimit-limit-requests': String(calls.limit),
      'x-ratelimit-remaining-requests': String(calls.remaining),
      'x-ratelimit-reset-requests': duration(calls.resetMs),
      'x-ratelimit-limit-tokens': String(tokens.limit),
      'x-ratelimit-remaining-tokens': String(tokens.remaining),
      'x-ratelimit-reset-tokens': duration(tokens.resetMs),
    };
  }
  const resetAt = (ms: number) => new Date(nowMs + Math.max(0, ms)).toISOString();
  return {
    ...requestId(api, nowMs),
    'anthropic-ratelimit-requests-limit': String(calls.limit),
    'anthropic-ratelimit-requests-remaining': String(calls.remaining),
    'anthropic-ratelimit-requests-reset': resetAt(calls.resetMs),
    'anthropic-ratelimit-tokens-limit': String(tokens.limit),
    'anthropic-ratelimit-tokens-remaining': String(tokens.remaining),
    'anthropic-ratelimit-tokens-reset': resetAt(tokens.resetMs),
  };
}

/** The delay headers of a 429 from a budget: OpenAI sends both retry-after forms, Anthropic whole seconds. */
function retryHeaders(api: StandInApi, resetMs: number): Record<string, string> {
  const ms = Math.max(0, Math.ceil(resetMs));
  if (api === 'openai') return { 'retry-after-ms': String(ms), 'retry-after': String(Math.ceil(ms / 1_000)) };
  return { 'retry-after': String(Math.ceil(ms / 1_000)) };
}
