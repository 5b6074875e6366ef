import { lookup } from 'node:dns/promises';
import { connect } from 'node:net';

/** A `--bootstrap` that is malformed, or none of whose servers can be reached; the message names each address and why. */
export class BootstrapError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'BootstrapError';
  }
}

/** One bootstrap server. */
export interface BootstrapServer {
  readonly host: string;
  readonly port: number;
  /** As written, for messages. */
  readonly address: string;
}

/** How long the pre-flight check waits; both well under librdkafka's silent 30 s. */
export interface BootstrapCheckOptions {
  /** Orderly's own limit on the name lookup (the system resolver may retry for much longer). @defaultValue 3000 */
  readonly lookupTimeoutMs?: number;
  /** @defaultValue 4000 */
  readonly connectTimeoutMs?: number;
}

// host:port, [v6]:port, optionally after a librdkafka protocol prefix (PLAINTEXT://, SSL://, ...).
const SERVER = /^(?:[A-Za-z_]+:\/\/)?(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+)):(\d{1,5})$/;

/** Splits `host:port[,host:port...]`; throws naming the bad entry and the expected form. */
export function parseBootstrap(bootstrap: string): BootstrapServer[] {
  const entries = typeof bootstrap === 'string' ? bootstrap.split(',').map((s) => s.trim()) : [];
  if (entries.length === 0 || entries.every((e) => e === '')) {
    throw new BootstrapError(`bootstrap servers are empty; give host:port[,host:port...], e.g. 127.0.0.1:9092`);
  }
  return entries.map((address) => {
    const match = SERVER.exec(address);
    const port = Number(match?.[3]);
    if (!match || !Number.isInteger(port) || port < 1 || port > 65_535) {
      throw new BootstrapError(
        `bootstrap server '${address}' in '${bootstrap}' is not host:port (a port from 1 to 65535); give host:port[,host:port...], e.g. 127.0.0.1:9092`,
      );
    }
    return { host: (match[1] ?? match[2])!, port, address };
  });
}

/**
 * Pre-flight check of `bootstrap` before any Kafka client starts (librdkafka says nothing for
 * 30 s, then only `Local: Timed out`): refuses a malformed list at once, then looks up and
 * connects to every server in parallel, and throws, naming each address and whether its name did
 * not resolve or its connection was refused or unanswered, when none can be reached.
 */
export async function checkBootstrap(bootstrap: string, options: BootstrapCheckOptions = {}): Promise<void> {
  const servers = parseBootstrap(bootstrap);
  const problems = await Promise.all(servers.map((server) => reach(server, options)));
  if (problems.some((p) => p === undefined)) return;
  throw new BootstrapError(`cannot reach Kafka at '${bootstrap}': ${problems.join('; ')}; check the address and that the broker runs and listens there`);
}

/** Undefined when a TCP connection to the server opens; otherwise why not. */
async function reach(server: BootstrapServer, options: BootstrapCheckOptions): Promise<string | undefined> {
  const lookupMs = options.lookupTimeoutMs ?? 3_000;
  let host: string;
  try {
    host = (await withTimeout(lookup(server.host), lookupMs)).address;
  } catch (error) {
    if (error instanceof TimeoutError) return `${server.address}: the name '${server.host}' did not resolve within ${lookupMs} ms`;
    return `${server.address}: the name '${server.host}' did not resolve (${codeOf(error)})`;
  }
  const connectMs = options.connectTimeoutMs ?? 4_000;
  return new Promise((resolve) => {
    const socket = connect({ host, port: server.port });
    const done = (problem: string | undefined) => {
      socket.destroy();
      resolve(problem);
    };
    socket.setTimeout(connectMs, () => done(`${server.address}: no answer from ${host}:${server.port} within ${connectMs} ms`));
    socket.once('connect', () => done(undefined));
    socket.once('error', (error) => {
      const code = codeOf(error);
      done(
        code === 'ECONNREFUSED'
          ? `${server.address}: connection refused by ${host}:${server.port} (nothing listens there)`
          : `${server.address}: cannot connect to ${host}:${server.port} (${code})`,
      );
    });
  });
}

class TimeoutError extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function codeOf(error: unknown): string {
  const e = error as { code?: string; message?: string };
  return e.code ?? e.message ?? String(error);
}
