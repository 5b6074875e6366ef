import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { down, up } from '../../tools/kafka/broker.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The broker a run uses, and how to let it go. */
export interface BenchBroker {
  readonly bootstrap: string;
  /** `started`, or the bootstrap given. */
  readonly description: string;
  readonly started: boolean;
  /** The broker's log directory (`log.dirs`) when it was started here: the soak measures the changelogs there. */
  readonly dataDir?: string;
  stop(): Promise<void>;
}

const log = (line: string) => process.stderr.write(`[kafka] ${line}\n`);

/**
 * The given cluster, or a one-node broker of the benchmark's own (tools/kafka/broker.ts) in
 * .orderly/kafka-bench, stopped and deleted by `stop()`. Its JVM gets a 1 GiB heap and the full
 * JIT unless ORDERLY_KAFKA_JVM_OPTS says otherwise (the tools' default, C1 only, starts faster
 * but runs slower).
 */
export async function benchBroker(options: { bootstrap?: string; port: number }): Promise<BenchBroker> {
  if (options.bootstrap) {
    return { bootstrap: options.bootstrap, description: options.bootstrap, started: false, stop: async () => undefined };
  }
  process.env.ORDERLY_KAFKA_JVM_OPTS ??= '-Xmx1g';
  const dir = join(REPO, '.orderly', 'kafka-bench');
  const cluster = await up({ port: options.port, dir, log });
  return {
    bootstrap: cluster.bootstrapServers,
    description: `started (1 node, ${process.env.ORDERLY_KAFKA_JVM_OPTS})`,
    started: true,
    dataDir: join(dir, 'node-1', 'data'),
    stop: () => down({ dir, purge: true, graceSeconds: 10, log }),
  };
}
