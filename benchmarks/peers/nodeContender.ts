/**
 * A Node contender of the peers benchmark (raw or orderly), run as a child of
 * benchmarks/peers/run.ts: `node --import tsx nodeContender.ts '<ContenderSpec as JSON>'`. It sends
 * `{ type: 'first' }` over the IPC channel at its first event and runs until SIGTERM; the benchmark
 * measures it from outside, as it measures the Java contenders.
 */
import { runRawConsumer } from '../kafka/rawConsumer.js';
import { runOrderlyContender } from './orderlyContender.js';
import type { ContenderSpec } from './spec.js';

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? 'null') as ContenderSpec | null;
  if (!spec || !process.send) throw new Error('nodeContender.ts runs as a child of benchmarks/peers/run.ts, with its spec as the argument');
  // Stays alive until the benchmark has read its figures and stops it.
  const alive = setInterval(() => undefined, 60_000);
  if (spec.contender === 'raw') {
    // Node's default on SIGTERM (exit) is all raw needs.
    await runRawConsumer({ kind: 'raw', ...spec, topic: spec.input, events: 0, decideMs: 0 });
    return;
  }
  if (spec.contender !== 'orderly') throw new Error(`nodeContender.ts runs raw or orderly, not ${spec.contender}`);
  const worker = await runOrderlyContender(spec);
  process.once('SIGTERM', () => {
    clearInterval(alive);
    void worker.stop().then(() => process.exit(0));
  });
  await worker.done;
}

main().catch((error: unknown) => {
  process.stderr.write(`peers contender: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
