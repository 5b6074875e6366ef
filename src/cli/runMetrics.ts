import type { Logger } from 'pino';
import type { EngineObserver } from '../engine/outcomes.js';
import type { RunningTopology } from '../kafka/runner.js';
import { PrometheusExporter } from '../metrics/prometheusExporter.js';
import { serveMetrics } from '../metrics/serveMetrics.js';

/** The `/metrics` endpoint of `orderly run --metrics-port`: its observer for the worker, then the worker to watch. */
export interface RunMetrics {
  readonly observer: EngineObserver;
  watch(worker: RunningTopology): void;
  close(): Promise<void>;
}

/** Listens first, so that a port in use stops `orderly run` before it joins the group. */
export async function startRunMetrics(options: { port: number; host: string }, logger: Logger): Promise<RunMetrics> {
  const exporter = new PrometheusExporter();
  const server = await serveMetrics(exporter, options);
  logger.info({ url: server.url }, 'metrics served');
  return {
    observer: exporter.observer(),
    watch: (worker) => exporter.watch(() => worker.engine.status()),
    close: () => server.close(),
  };
}
