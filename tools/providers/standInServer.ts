// A stand-in for the providers' HTTP APIs on 127.0.0.1 (node:http), for the provider adapters'
// tests and `npm run providers:check`: OpenAI's chat completions (POST /v1/chat/completions) and
// Anthropic's Messages API (POST /v1/messages), with their bodies, rate-limit headers and error
// shapes. It counts every request, so a test can prove that no SDK retried on its own.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

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
  | { readonly status: 400 | 429 | 500 | 503 | 529; readonly headers?: Record<string, string> };

export interface StandInOptions {
  /** The decision for a prompt (the JSON the model would write). */
  readonly decide: (prompt: string) => unknown;
  /** A scripted answer for a request; undefined: the window's rule, else a decision. */
  readonly reply?: (request: StandInRequest, index: number) => StandInReply | undefined;
  /** The provider's budget: past `calls` in a fixed window of `windowMs`, a 429 until the window ends. */
  readonly window?: { readonly calls: number; readonly windowMs: number };
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

const TOKEN_LIMIT = 100_000;

export async function startStandInServer(options: StandInOptions): Promise<StandInServer> {
  const requests: StandInRequest[] = [];
  const refusals: StandInRefusal[] = [];
  let windowStartMs = -Infinity;
  let inWindow = 0;

  const windowReply = (nowMs: number): { reply: StandInReply; remaining: number; resetMs: number } => {
    const window = options.window ?? { calls: 1_000, windowMs: 60_000 };
    if (nowMs >= windowStartMs + window.windowMs) {
      windowStartMs = nowMs;
      inWindow = 0;
    }
    const resetMs = windowStartMs + window.windowMs - nowMs;
    if (inWindow >= window.calls) {
      refusals.push({ atMs: nowMs, untilMs: windowStartMs + window.windowMs });
      return { reply: { status: 429 }, remaining: 0, resetMs };
    }
    inWindow += 1;
    return { reply: { status: 200 }, remaining: window.calls - inWindow, resetMs };
  };

  const handle = (api: StandInApi, res: ServerResponse, raw: string) => {
    const nowMs = Date.now();
    const body = JSON.parse(raw) as Record<string, unknown>;
    const request: StandInRequest = { api, atMs: nowMs, body, prompt: promptOf(body) };
    requests.push(request);
    const scripted = options.reply?.(request, requests.length - 1);
    const { reply, remaining, resetMs } = scripted ? { reply: scripted, remaining: 1, resetMs: 1_000 } : windowReply(nowMs);
    const limit = options.window?.calls ?? 1_000;
    // A scripted refusal carries only the headers the script gives it (and a request id).
    const budget = scripted && reply.status !== 200 ? requestId(api, nowMs) : limitHeaders(api, nowMs, limit, remaining, resetMs);
    const headers = { 'content-type': 'application/json', ...budget, ...(reply.status === 429 && !scripted ? retryHeaders(api, resetMs) : {}), ...reply.headers };
    request.status = reply.status;
    const answer = reply.status === 200 ? success(api, body, request.prompt, reply.text ?? JSON.stringify(reply.decision ?? options.decide(request.prompt))) : failure(api, reply.status);
    const send = () => {
      res.writeHead(reply.status, headers);
      res.end(JSON.stringify(answer));
    };
    if (options.latencyMs) setTimeout(send, options.latencyMs);
    else send();
  };

  const server = createServer((req, res) => {
    const api: StandInApi | undefined = req.method !== 'POST' ? undefined : req.url === '/v1/chat/completions' ? 'openai' : req.url === '/v1/messages' ? 'anthropic' : undefined;
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
    close: () => new Promise<void>((resolve) => {
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
  return (last.content as Array<{ type: string; text?: string }>).filter((p) => p.type === 'text').map((p) => p.text).join('');
}

function success(api: StandInApi, body: Record<string, unknown>, prompt: string, text: string): unknown {
  const input = Math.ceil(prompt.length / 4) + 10;
  const output = Math.ceil(text.length / 4);
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

function failure(api: StandInApi, status: number): unknown {
  const kind = ERRORS[status]!;
  const message = `stand-in ${status}`;
  if (api === 'openai') return { error: { message, type: kind.openai[0], param: null, code: kind.openai[1] } };
  return { type: 'error', error: { type: kind.anthropic, message } };
}

function requestId(api: StandInApi, nowMs: number): Record<string, string> {
  return { [api === 'openai' ? 'x-request-id' : 'request-id']: `req_${nowMs}` };
}

/** The budget headers each provider sends on every response. */
function limitHeaders(api: StandInApi, nowMs: number, limit: number, remaining: number, resetMs: number): Record<string, string> {
  if (api === 'openai') {
    return {
      ...requestId(api, nowMs),
      'x-ratelimit-limit-requests': String(limit),
      'x-ratelimit-remaining-requests': String(remaining),
      'x-ratelimit-reset-requests': `${Math.max(0, Math.ceil(resetMs))}ms`,
      'x-ratelimit-limit-tokens': String(TOKEN_LIMIT),
      'x-ratelimit-remaining-tokens': String(TOKEN_LIMIT - 100),
      'x-ratelimit-reset-tokens': '6m0s',
    };
  }
  const resetAt = new Date(nowMs + Math.max(0, resetMs)).toISOString();
  return {
    ...requestId(api, nowMs),
    'anthropic-ratelimit-requests-limit': String(limit),
    'anthropic-ratelimit-requests-remaining': String(remaining),
    'anthropic-ratelimit-requests-reset': resetAt,
    'anthropic-ratelimit-tokens-limit': String(TOKEN_LIMIT),
    'anthropic-ratelimit-tokens-remaining': String(TOKEN_LIMIT - 100),
    'anthropic-ratelimit-tokens-reset': resetAt,
  };
}

/** The delay headers of a 429 from the window: OpenAI sends both retry-after forms, Anthropic whole seconds. */
function retryHeaders(api: StandInApi, resetMs: number): Record<string, string> {
  const ms = Math.max(0, Math.ceil(resetMs));
  if (api === 'openai') return { 'retry-after-ms': String(ms), 'retry-after': String(Math.ceil(ms / 1_000)) };
  return { 'retry-after': String(Math.ceil(ms / 1_000)) };
}
