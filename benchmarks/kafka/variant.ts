/**
 * One variant of the Kafka benchmark, run as a child process of benchmarks/kafka/run.ts so that
 * its memory and CPU are its own: `node --import tsx variant.ts '<VariantSpec as JSON>'`. It sends
 * its progress and result over the IPC channel; its stdout and stderr go to the benchmark's stderr.
 */
import { runOrderlyWorker } from './orderlyWorker.js';
import { runRawConsumer } from './rawConsumer.js';
import { runSerialWorker } from './serialWorker.js';
import type { VariantResult, VariantSpec } from './spec.js';

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? 'null') as VariantSpec | null;
  if (!spec || !process.send) throw new Error('variant.ts runs as a child of benchmarks/kafka/run.ts, with its spec as the argument');
  const run: Record<VariantSpec['kind'], (spec: VariantSpec) => Promise<VariantResult>> = {
    raw: runRawConsumer,
    serial: runSerialWorker,
    orderly: runOrderlyWorker,
  };
  const result = await run[spec.kind](spec);
  // Exit once the result is sent: a client's lingering handle must not keep the child alive.
  process.send({ type: 'result', result }, () => process.exit(0));
}

main().catch((error: unknown) => {
  process.stderr.write(`variant: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
