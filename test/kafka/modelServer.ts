// A stand-in for an OpenAI-compatible chat-completions API in the test process: the disputes
// example calls it when ORDERLY_MODEL_URL is set. Each test decides, per request, what it answers.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';
import { standIn } from '../../examples/disputes/model.js';
import type { Dispute } from '../../testkit/scenarios/disputes.js';

/** How a request is answered: with the stand-in's answer (no valid decision for a reason of "unparseable"), or with a 429. */
export interface ModelReply {
  decide(): void;
  rateLimited(retryAfterS: number): void;
}

/** Starts the server (closed when the test ends); `respond` gets each request's dispute and answers it, now or later. */
export async function modelServer(respond: (dispute: Dispute, reply: ModelReply) => void): Promise<{ url: string }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const { messages } = JSON.parse(body) as { messages: Array<{ content: string }> };
      const dispute = JSON.parse(messages[messages.length - 1]!.content) as Dispute;
      respond(dispute, {
        decide() {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ choices: [{ message: { content: JSON.stringify(standIn(dispute)) } }] }));
        },
        rateLimited(retryAfterS) {
          res.writeHead(429, { 'retry-after': String(retryAfterS), 'content-type': 'application/json' });
          res.end('{"error":{"message":"rate limited"}}');
        },
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` };
}
