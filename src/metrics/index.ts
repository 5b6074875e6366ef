/**
 * `orderly/metrics`: a Prometheus exporter of an engine's outcomes, model calls, parked keys and
 * lag, on prom-client. Its own entry point, so that `orderly` itself never loads prom-client.
 */
export { PrometheusExporter, MODEL_CALL_BUCKETS_SECONDS, type PrometheusExporterOptions } from './prometheusExporter.js';
export { serveMetrics, type MetricsServer, type ServeMetricsOptions } from './serveMetrics.js';
export type { EngineStatus, PartitionStatus, BudgetStatus } from '../engine/engineStatus.js';
