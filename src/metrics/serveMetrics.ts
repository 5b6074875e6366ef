import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PrometheusExporter } from './prometheusExporter.js';

/** Where {@link serveMetrics} listens. */
export interface ServeMetricsOptions {
  /** 0: any free port. */
  readonly port: number;
  /** @defaultValue '127.0.0.1' (loopback only: the metrics name topics and keys' partitions) */
  readonly host?: string;
}

/** A running metrics endpoint. */
export interface MetricsServer {
  /** `http://host:port/metrics` */
  readonly url: string;
  close(): Promise<void>;
}

/** Serves the exporter's text at `GET /metrics`; any other path is a 404. */
export async function serveMetrics(exporter: PrometheusExporter, options: ServeMetricsOptions): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the metrics are at GET /metrics\n');
      return;
    }
    exporter.metrics().then(
      (text) => response.writeHead(200, { 'content-type': exporter.contentType }).end(text),
      (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`collecting the metrics failed: ${(error as Error).message}\n`),
    );
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new Error(`metrics: cannot listen on ${host}:${options.port}: ${error.message}; choose another --metrics-port (or 0 for any free one)`, {
          cause: error,
        }),
      ),
    );
    server.listen(options.port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
