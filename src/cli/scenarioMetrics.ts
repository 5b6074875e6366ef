import { PrometheusExporter } from '../metrics/prometheusExporter.js';
import { Registry } from 'prom-client';
import { runWorkedExample, workedExampleVariants, type WorkedExampleOptions, type WorkedExampleVariant } from '../../testkit/scenarios/workedExample.js';

/**
 * Runs every variant of the worked example that runs the engine, each with an exporter labelled
 * with its variant on one registry, and returns the exposition text. `retry-topic` runs no engine
 * (it is the naive baseline), so it has no metrics.
 */
export async function scenarioMetrics(optionsOf: (variant: WorkedExampleVariant) => WorkedExampleOptions): Promise<string> {
  const registry = new Registry();
  for (const variant of workedExampleVariants) {
    if (variant === 'retry-topic') continue;
    const exporter = new PrometheusExporter({ registry, labels: { variant } });
    await runWorkedExample(variant, { ...optionsOf(variant), observer: exporter.observer(), onIdle: (status) => exporter.update(status) });
  }
  return registry.metrics();
}
