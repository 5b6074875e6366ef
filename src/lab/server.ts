import { createServer, type Server } from 'node:http';
import { readdir, readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Options of {@link serveLab}. */
export interface LabServerOptions {
  /** 0 picks a free port. */
  readonly port: number;
  readonly host: string;
  /** The built page: `npm run build` writes it to dist/lab. */
  readonly dir?: string;
}

/** A running lab server. */
export interface LabServer {
  /** Where the page is, e.g. `http://127.0.0.1:8080/`. */
  readonly url: string;
  close(): Promise<void>;
}

const contentTypes: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/** The page's files, next to the compiled CLI: dist/src/lab/server.js serves dist/lab. */
export const builtLabDir = fileURLToPath(new URL('../../lab/', import.meta.url));

/**
 * Serves the lab page's static files. Only the files of the built page are served, by name: the
 * page runs everything in the browser and asks the server for nothing else.
 */
export async function serveLab(options: LabServerOptions): Promise<LabServer> {
  const dir = options.dir ?? builtLabDir;
  const files = await readdir(dir).catch((): string[] => []);
  if (!files.includes('index.html')) {
    throw new Error(`orderly lab: the page is not built (no index.html in ${dir}); run \`npm run build\` in the checkout`);
  }
  const served = new Set(files.filter((file) => extname(file) in contentTypes));
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://lab').pathname;
    const file = path === '/' ? 'index.html' : path.slice(1);
    if ((request.method !== 'GET' && request.method !== 'HEAD') || !served.has(file)) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`orderly lab: no ${path} here; the page is at /\n`);
      return;
    }
    readFile(join(dir, file)).then(
      (body) =>
        response
          .writeHead(200, { 'content-type': contentTypes[extname(file)]!, 'cache-control': 'no-cache' })
          .end(request.method === 'HEAD' ? undefined : body),
      (error: Error) => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`orderly lab: cannot read ${file}: ${error.message}\n`),
    );
  });
  await listen(server, options.port, options.host);
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/`,
    close: () => new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve()))),
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(new Error(`orderly lab: cannot listen on ${host}:${port} (${error.code ?? error.message}); pick another --port, or 0 for any free one`)),
    );
    server.listen(port, host, () => resolve());
  });
}
