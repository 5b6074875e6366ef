import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { down, up } from '../../tools/kafka/broker.js';
import type { BenchBroker } from '../kafka/broker.js';

const DIR = join(fileURLToPath(new URL('../..', import.meta.url)), '.orderly', 'kafka-peers');
const log = (line: string) => process.stderr.write(`[kafka] ${line}\n`);

/**
 * The given cluster, or a one-node broker of this benchmark's own (tools/kafka/broker.ts) in
 * .orderly/kafka-peers on `port`, stopped and deleted by `stop()`; its JVM gets a 1 GiB heap and
 * the full JIT unless ORDERLY_KAFKA_JVM_OPTS says otherwise.
 */
export async function peersBroker(options: { bootstrap?: string; port: number }): Promise<BenchBroker> {
  if (options.bootstrap) return { bootstrap: options.bootstrap, description: options.bootstrap, started: false, stop: async () => undefined };
  process.env.ORDERLY_KAFKA_JVM_OPTS ??= '-Xmx1g';
  const cluster = await up({ port: options.port, dir: DIR, log });
  return {
    bootstrap: cluster.bootstrapServers,
    description: `started (1 node on port ${options.port}, ${process.env.ORDERLY_KAFKA_JVM_OPTS})`,
    started: true,
    stop: () => down({ dir: DIR, purge: true, graceSeconds: 10, log }),
  };
}
