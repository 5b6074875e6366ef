import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { MAX_BODY_BYTES, parseJobInput, requestRecord, type JobInput } from './jobRequest.js';
import { cursorAfter, RESPONSE_EVENT_ID, type JobTable } from './jobTable.js';

/** What the HTTP side needs: the table to read, and a way to produce a request that settles once the broker has it. */
export interface GatewayBackend {
  readonly table: JobTable;
  readonly requestTopic: string;
  produce(record: ReturnType<typeof requestRecord>): Promise<void>;
}

/** A job id as the gateway makes them: a random UUID (122 random bits). */
const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const KEEPALIVE_MS = 15_000;
const RETRY_MS = 1_000;

/** The gateway's HTTP API: `POST /jobs`, `GET /jobs/:id`, `GET /jobs/:id/events`. */
export function gatewayServer(backend: GatewayBackend): Server {
  return createServer((req, res) => {
    route(backend, req, res).catch((error: unknown) => {
      if (!res.headersSent) send(res, 500, { error: `the gateway failed: ${(error as Error).message}` });
      else res.destroy();
    });
  });
}

async function route(backend: GatewayBackend, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://gateway').pathname;
  if (path === '/jobs') {
    if (req.method !== 'POST') return methodNotAllowed(res, 'POST');
    return postJob(backend, req, res);
  }
  const match = /^\/jobs\/([^/]+)(\/events)?$/.exec(path);
  if (!match) return send(res, 404, { error: `no such resource: ${path}; the API is POST /jobs, GET /jobs/:id, GET /jobs/:id/events` });
  if (req.method !== 'GET') return methodNotAllowed(res, 'GET');
  const jobId = match[1]!;
  // Only ids the gateway made can exist; anything else is unknown without a look.
  if (!JOB_ID.test(jobId) || !backend.table.has(jobId)) return send(res, 404, { error: `no job ${jobId}` });
  if (match[2]) return streamEvents(backend.table, jobId, req, res);
  return send(res, 200, backend.table.view(jobId));
}

async function postJob(backend: GatewayBackend, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req);
  if (body === undefined) {
    send(res, 413, { error: `the body is over ${MAX_BODY_BYTES} bytes` }, { connection: 'close' });
    return;
  }
  const parsed = parseJobInput(body);
  if (!parsed.ok) return send(res, 400, { error: parsed.reason });
  const jobId = randomUUID();
  try {
    await backend.produce(requestRecord(backend.requestTopic, jobId, parsed.input satisfies JobInput, Date.now()));
  } catch (error) {
    return send(res, 503, { error: `the job could not be queued: ${(error as Error).message}; try again` });
  }
  backend.table.accepted(jobId);
  send(res, 202, { jobId }, { location: `/jobs/${jobId}` });
}

/** The body as text, or undefined past the size limit (read no further). */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES) {
    req.resume();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      req.resume();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Every status update, then the response, as server-sent events; then the stream ends. A client
 * that reconnects with `Last-Event-ID` gets only what follows; one that already has the response
 * gets 204, which tells an EventSource to stop reconnecting.
 */
function streamEvents(table: JobTable, jobId: string, req: IncomingMessage, res: ServerResponse): void {
  const lastEventId = req.headers['last-event-id'];
  let cursor = cursorAfter(typeof lastEventId === 'string' ? lastEventId : undefined);
  if (lastEventId === RESPONSE_EVENT_ID) {
    res.writeHead(204).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  // A client cut off (a gateway restart) comes back after a second, not the default three.
  res.write(`retry: ${RETRY_MS}\n\n`);
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
  let unwatch = (): void => undefined;
  const stop = () => {
    clearInterval(keepalive);
    unwatch();
  };
  const pump = () => {
    const next = table.eventsAfter(jobId, cursor);
    cursor = next.cursor;
    for (const e of next.events) res.write(`id: ${e.id}\nevent: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
    if (next.ended) {
      stop();
      res.end();
    }
  };
  unwatch = table.watch(jobId, pump);
  req.on('close', stop);
  pump();
}

function methodNotAllowed(res: ServerResponse, allowed: string): void {
  send(res, 405, { error: `use ${allowed} here` }, { allow: allowed });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers }).end(text);
}
