import { RateLimited, sleep, type DecideContext } from '../../src/index.js';
import { standInDecision, type Dispute } from '../../testkit/scenarios/disputes.js';

/**
 * The agent step's model call. With ORDERLY_MODEL_URL set (an OpenAI-compatible API base, e.g.
 * `https://api.example.com/v1`, with ORDERLY_MODEL_API_KEY and ORDERLY_MODEL) it asks that model;
 * otherwise a deterministic stand-in answers after ORDERLY_MODEL_LATENCY_MS (default 200).
 * Either way it only returns a decision: the engine validates it against the Decision schema.
 */
export function disputeModel(env: NodeJS.ProcessEnv = process.env): (dispute: Dispute, ctx: DecideContext) => Promise<unknown> {
  const url = env.ORDERLY_MODEL_URL;
  if (url) return (dispute, ctx) => askModel(url, env.ORDERLY_MODEL_API_KEY, env.ORDERLY_MODEL ?? 'gpt-4o-mini', dispute, ctx.signal);
  const latencyMs = Number(env.ORDERLY_MODEL_LATENCY_MS ?? 200);
  if (!Number.isFinite(latencyMs) || latencyMs < 0)
    throw new RangeError(`ORDERLY_MODEL_LATENCY_MS must be a number of ms, got '${env.ORDERLY_MODEL_LATENCY_MS}'`);
  return async (dispute, ctx) => {
    await sleep(ctx.clock, latencyMs, ctx.signal);
    return standIn(dispute);
  };
}

/** The stand-in: the shared deterministic rules, and for a reason of "unparseable" an answer no schema accepts. */
export function standIn(dispute: Dispute): unknown {
  if (dispute.reason === 'unparseable') return { action: 'maybe?', rationale: '' };
  return standInDecision(dispute);
}

const PROMPT =
  'You decide card payment disputes. Answer with one JSON object and nothing else: ' +
  '{"action": "refund" | "escalate" | "reject", "rationale": "<one sentence>"}.';

async function askModel(baseUrl: string, apiKey: string | undefined, model: string, dispute: Dispute, signal: AbortSignal): Promise<unknown> {
  // The signal ends the request when the engine gives the call up (its partition was revoked).
  const response = await fetch(`${baseUrl.replace(/\/$/, '')}/chat/completions`, {
    method: 'POST',
    signal,
    headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
    body: JSON.stringify({
      model,
      response_format: { type: 'json_object' },
      messages: [
        { role: 'system', content: PROMPT },
        { role: 'user', content: JSON.stringify(dispute) },
      ],
    }),
  });
  if (response.status === 429) throw new RateLimited(retryAfterMs(response.headers.get('retry-after')));
  if (!response.ok) throw new Error(`model answered HTTP ${response.status}: ${(await response.text()).slice(0, 200)}`);
  const body = (await response.json()) as { choices?: Array<{ message?: { content?: string } }> };
  const content = body.choices?.[0]?.message?.content;
  if (typeof content !== 'string') throw new Error('model answer has no choices[0].message.content');
  return JSON.parse(content);
}

/** Retry-After in seconds or as an HTTP date; 1 s when absent or unreadable. */
function retryAfterMs(header: string | null): number {
  if (header === null) return 1_000;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1_000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? 1_000 : Math.max(0, at - Date.now());
}
