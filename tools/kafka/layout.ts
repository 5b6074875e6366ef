/**
 * Where a local Kafka cluster lives on disk, and which ports it uses.
 *
 * One folder (default `<repo>/.orderly/kafka`) holds everything:
 *
 *     cluster.json          what `up` created: version, cluster id, node count, base port
 *     node-1/
 *       server.properties   broker + controller config
 *       data/               log.dirs (topic data and KRaft metadata)
 *       server.log          broker log (log4j2)
 *       stdout.log          JVM stdout/stderr (crashes, GC warnings)
 *       kafka.pid           pid of the running JVM
 *     node-2/ ...
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (two levels above this file). */
export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Default PLAINTEXT port of node 1. */
export const DEFAULT_PORT = 9092;

/** Options shared by every broker command. */
export interface BrokerOptions {
  /** Number of combined broker+controller nodes (default 1; 3 for a replicated cluster). */
  nodes?: number;
  /**
   * PLAINTEXT port of node 1 (default 9092). Node i uses `port + 2(i-1)` for
   * PLAINTEXT and the port after it for its controller.
   */
  port?: number;
  /** Folder for all broker config, data and logs (default `$ORDERLY_KAFKA_DIR`, else `<repo>/.orderly/kafka`). */
  dir?: string;
  /** Receives progress lines (default: printed to stdout). */
  log?: (line: string) => void;
}

/** What `up` recorded about the cluster in `cluster.json`. */
export interface ClusterRecord {
  kafkaVersion: string;
  clusterId: string;
  nodes: number;
  port: number;
}

/** Paths and ports of one node. */
export interface NodeLayout {
  id: number;
  port: number;
  controllerPort: number;
  dir: string;
  dataDir: string;
  propertiesFile: string;
  logFile: string;
  stdoutFile: string;
  pidFile: string;
}

/**
 * Resolves the cluster folder from the options (relative to the working directory), else
 * `$ORDERLY_KAFKA_DIR`, else `<repo>/.orderly/kafka`.
 */
export function clusterDir(options: BrokerOptions): string {
  const dir = options.dir ?? process.env.ORDERLY_KAFKA_DIR;
  return dir ? resolve(dir) : join(REPO_ROOT, ".orderly", "kafka");
}

/** Lays out the nodes of a cluster of `nodes` nodes whose node 1 listens on `port`. */
export function nodeLayouts(dir: string, nodes: number, port: number): NodeLayout[] {
  return Array.from({ length: nodes }, (_, index) => {
    const id = index + 1;
    const nodeDir = join(dir, `node-${id}`);
    return {
      id,
      port: port + 2 * index,
      controllerPort: port + 2 * index + 1,
      dir: nodeDir,
      dataDir: join(nodeDir, "data"),
      propertiesFile: join(nodeDir, "server.properties"),
      logFile: join(nodeDir, "server.log"),
      stdoutFile: join(nodeDir, "stdout.log"),
      pidFile: join(nodeDir, "kafka.pid"),
    };
  });
}

/** The `host:port,...` list that clients bootstrap from. */
export function bootstrapServers(nodes: readonly NodeLayout[]): string {
  return nodes.map((node) => `127.0.0.1:${node.port}`).join(",");
}

/** Reads `cluster.json`, or returns undefined when the folder holds no cluster. */
export function readRecord(dir: string): ClusterRecord | undefined {
  const file = join(dir, "cluster.json");
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, "utf8")) as ClusterRecord;
}

/** Writes `cluster.json`, creating the folder. */
export function writeRecord(dir: string, record: ClusterRecord): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "cluster.json"), `${JSON.stringify(record, null, 2)}\n`);
}

/** Checks a node count or port given by the user, and names the option when it is wrong. */
export function checkOptions(options: BrokerOptions): void {
  const { nodes, port } = options;
  if (nodes !== undefined && !(Number.isInteger(nodes) && nodes >= 1 && nodes <= 9)) {
    throw new BrokerError(`--nodes must be a whole number from 1 to 9 (got ${nodes})`);
  }
  if (port !== undefined && !(Number.isInteger(port) && port >= 1024 && port <= 65500)) {
    throw new BrokerError(`--port must be a whole number from 1024 to 65500 (got ${port})`);
  }
}

/** An error whose message says what went wrong and what to do; the CLI prints it without a stack. */
export class BrokerError extends Error {
  override name = "BrokerError";
}
