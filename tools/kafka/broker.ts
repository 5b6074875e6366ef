/**
 * A local Apache Kafka cluster (KRaft, combined broker+controller nodes on
 * 127.0.0.1) for tests and development, run from Maven Central jars.
 *
 *     npx tsx tools/kafka/broker.ts up [--nodes 3] [--port 9092] [--dir D] [--timeout S]
 *     npx tsx tools/kafka/broker.ts down [--dir D] [--grace S] [--purge]
 *     npx tsx tools/kafka/broker.ts status [--dir D] [--json]
 *     npx tsx tools/kafka/broker.ts kill NODE_ID [--dir D] [--signal SIGTERM]
 *     npx tsx tools/kafka/broker.ts fetch
 *     npx tsx tools/kafka/broker.ts topic create|produce|consume ...   (see topicCommands.ts)
 *
 * The same commands are exported (`up`, `down`, `status`, `killNode`,
 * `fetchJars`) for a test set-up to call in-process. The brokers run
 * detached: they outlive the process that started them until `down`.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { newClusterId, serverProperties } from "./config.js";
import { ensureLibs, findJava, kafkaVersion } from "./jars.js";
import {
  BrokerError,
  DEFAULT_PORT,
  REPO_ROOT,
  bootstrapServers,
  checkOptions,
  clusterDir,
  nodeLayouts,
  readRecord,
  writeRecord,
  type BrokerOptions,
  type ClusterRecord,
  type NodeLayout,
} from "./layout.js";
import { liveBrokerIds, portIsFree } from "./probe.js";
import { runningPid, startDetached, stopProcess } from "./processes.js";
import { consumeTopic, createTopic, produceFile } from "./topicCommands.js";

export { BrokerError, type BrokerOptions } from "./layout.js";

const LOG4J_CONFIG = join(REPO_ROOT, "tools", "kafka", "log4j2.properties");
const DEFAULT_GRACE_SECONDS = 20;
/** Written to a node's server.log before each start, so errors quote only this start's lines. */
const START_MARK = "---- start by tools/kafka/broker.ts";
/**
 * Small heap, and the C1 compiler only: on 2 cores three JVMs start in about
 * a third of the time (C2's compile threads compete with start-up). Replace
 * with ORDERLY_KAFKA_JVM_OPTS (e.g. "-Xmx1g" for a benchmark).
 */
const DEFAULT_JVM_OPTS = "-Xmx384m -XX:TieredStopAtLevel=1";

/** Options of {@link up}. */
export interface UpOptions extends BrokerOptions {
  /** Seconds to wait for the cluster to answer, per attempt (default 60 for one node, 120 for more). */
  timeoutSeconds?: number;
}

/** Options of {@link down} and {@link killNode}. */
export interface DownOptions extends Pick<BrokerOptions, "dir" | "log"> {
  /** Seconds between SIGTERM and SIGKILL (default 20). */
  graceSeconds?: number;
  /** Also delete the cluster folder (data, config and logs). */
  purge?: boolean;
}

/** One node as {@link status} sees it. */
export interface NodeStatus {
  id: number;
  port: number;
  controllerPort: number;
  /** Pid of the running JVM, when it runs. */
  pid?: number;
  running: boolean;
  /** True when the node answered a Metadata request just now. */
  answering: boolean;
  logFile: string;
}

/** The cluster as {@link up} and {@link status} report it. */
export interface ClusterStatus {
  dir: string;
  kafkaVersion?: string;
  /** True when at least one node runs. */
  running: boolean;
  /** `127.0.0.1:port,...` of all nodes, running or not. */
  bootstrapServers: string;
  nodes: NodeStatus[];
}

/** What starting nodes needs: the folder, its record, the node layouts, Java and the jars. */
interface Cluster {
  dir: string;
  record: ClusterRecord;
  nodes: NodeLayout[];
  java: string;
  libs: string;
}

/** A start that did not answer in time (worth one retry), unlike a node that exited. */
class StartTimeout extends BrokerError {}

const defaultLog = (line: string): void => console.log(line);

/** The node layouts of `record` in `dir`. */
function layoutOf(dir: string, record: ClusterRecord): NodeLayout[] {
  return nodeLayouts(dir, record.nodes, record.port);
}

/** The pid of `node`'s broker JVM when it runs (matched on its properties file). */
function nodePid(node: NodeLayout): number | undefined {
  return runningPid(node.pidFile, node.propertiesFile);
}

/** A path for messages: relative to the working directory when that is shorter. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel.length < path.length && !rel.startsWith("..") ? rel : path;
}

/**
 * The last `count` lines of a file (from its last 64 KiB) written since the
 * last {@link START_MARK}, or "" when missing.
 */
function tail(file: string, count: number): string {
  if (!existsSync(file)) return "";
  const text = readFileSync(file, "utf8").slice(-65536);
  const mark = text.lastIndexOf(START_MARK);
  const lines = text
    .slice(mark < 0 ? 0 : mark)
    .trimEnd()
    .split("\n");
  return lines.slice(-count).join("\n");
}

/** An error about `node` that quotes the end of its logs and names the log file. */
function nodeError(ErrorType: typeof BrokerError, node: NodeLayout, what: string): BrokerError {
  const logs = [node.stdoutFile, node.logFile]
    .filter((file) => existsSync(file) && statSync(file).size > 0)
    .map((file) => `--- last lines of ${shown(file)}:\n${tail(file, 12)}`);
  return new ErrorType(`Kafka node ${node.id} ${what}; see ${shown(node.logFile)}\n${logs.join("\n")}`);
}

/** Throws when a cluster of a different shape than the options ask for is running. */
function checkSameShape(record: ClusterRecord, options: BrokerOptions, dir: string): void {
  const nodes = options.nodes ?? record.nodes;
  const port = options.port ?? record.port;
  if (nodes !== record.nodes || port !== record.port) {
    throw new BrokerError(
      `a ${record.nodes}-node Kafka cluster on port ${record.port} is running in ${shown(dir)}; ` +
        `stop it first (npm run kafka -- down) to start ${nodes} node(s) on port ${port}`,
    );
  }
}

/**
 * The record to start from: the running or matching one as it is, or a new
 * one (with a fresh folder) when the stored cluster differs from the options.
 */
function chooseRecord(dir: string, options: BrokerOptions, version: string, log: (line: string) => void): ClusterRecord {
  const stored = readRecord(dir);
  const running = stored ? layoutOf(dir, stored).some((node) => nodePid(node) !== undefined) : false;
  if (stored && running) return stored;
  const wanted = { nodes: options.nodes ?? 1, port: options.port ?? DEFAULT_PORT, kafkaVersion: version };
  if (stored && stored.nodes === wanted.nodes && stored.port === wanted.port && stored.kafkaVersion === wanted.kafkaVersion) {
    return stored;
  }
  if (existsSync(dir)) {
    log(`removing the old cluster in ${shown(dir)} (it does not match ${wanted.nodes} node(s) on port ${wanted.port})`);
    rmSync(dir, { recursive: true, force: true });
  }
  const record = { ...wanted, clusterId: newClusterId() };
  writeRecord(dir, record);
  return record;
}

/** Runs a command to completion; resolves with its exit code and output. */
function run(command: string, args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", (error) => done({ code: -1, output: String(error) }));
    child.on("close", (code) => done({ code: code ?? -1, output }));
  });
}

/** JVM arguments shared by the broker and the storage tool of `node`. */
function jvmArgs(cluster: Cluster, node: NodeLayout): string[] {
  const options = process.env.ORDERLY_KAFKA_JVM_OPTS ?? DEFAULT_JVM_OPTS;
  return [
    ...options.split(/\s+/).filter(Boolean),
    "-Djava.awt.headless=true",
    `-Dlog4j2.configurationFile=${LOG4J_CONFIG}`,
    `-Dkafka.logs.dir=${node.dir}`,
    "-cp",
    join(cluster.libs, "*"),
  ];
}

/** Formats the KRaft storage of `node` unless it already is. */
async function formatStorage(cluster: Cluster, node: NodeLayout): Promise<void> {
  if (existsSync(join(node.dataDir, "meta.properties"))) return;
  const standalone = cluster.nodes.length === 1 ? ["--standalone"] : [];
  const args = [...jvmArgs(cluster, node), "kafka.tools.StorageTool", "format", ...standalone, "-t", cluster.record.clusterId, "-c", node.propertiesFile];
  const result = await run(cluster.java, args, node.dir);
  if (result.code !== 0) {
    throw new BrokerError(`formatting the storage of Kafka node ${node.id} failed:\n${result.output.trim()}`);
  }
}

/** Writes the config of every node and formats the storage of those not yet formatted. */
async function prepareNodes(cluster: Cluster): Promise<void> {
  for (const node of cluster.nodes) {
    mkdirSync(node.dir, { recursive: true });
    writeFileSync(node.propertiesFile, serverProperties(node, cluster.nodes));
  }
  await Promise.all(cluster.nodes.map((node) => formatStorage(cluster, node)));
}

/** Throws when a port of `nodes` is taken by some other process. */
async function checkPortsFree(nodes: readonly NodeLayout[]): Promise<void> {
  for (const node of nodes) {
    for (const [port, what] of [
      [node.port, "PLAINTEXT"],
      [node.controllerPort, "controller"],
    ] as const) {
      if (!(await portIsFree(port))) {
        throw new BrokerError(
          `port ${port} (${what} port of Kafka node ${node.id}) on 127.0.0.1 is in use by another process. ` +
            `Stop it (ss -ltnp 'sport = :${port}' shows which) or choose other ports with --port N.`,
        );
      }
    }
  }
}

/** Starts the broker JVM of each of `nodes`, detached. */
function startNodes(cluster: Cluster, nodes: readonly NodeLayout[]): void {
  for (const node of nodes) {
    appendFileSync(node.logFile, `${START_MARK} at ${new Date().toISOString()}\n`);
    startDetached({
      command: cluster.java,
      args: [...jvmArgs(cluster, node), "kafka.Kafka", node.propertiesFile],
      cwd: node.dir,
      outputFile: node.stdoutFile,
      pidFile: node.pidFile,
    });
  }
}

/** True when every node of the cluster reports all nodes as live brokers. */
async function allAnswer(cluster: Cluster): Promise<boolean> {
  const answers = await Promise.all(cluster.nodes.map((node) => liveBrokerIds(node.port)));
  return answers.every((ids) => ids?.length === cluster.nodes.length);
}

/**
 * Waits until every node answers and sees all brokers. Throws at once when
 * one of `started` exits, and a {@link StartTimeout} after `timeoutMs`.
 */
async function waitUntilReady(cluster: Cluster, started: readonly NodeLayout[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const exited = started.find((node) => nodePid(node) === undefined);
    if (exited) throw nodeError(BrokerError, exited, "exited while starting");
    if (await allAnswer(cluster)) return;
    if (Date.now() >= deadline) {
      const first = started[0] ?? cluster.nodes[0];
      if (!first) throw new StartTimeout("no Kafka node to wait for");
      throw nodeError(StartTimeout, first, `(or another node) did not answer within ${timeoutMs / 1000} s`);
    }
    await sleep(250);
  }
}

/** Stops `nodes`: SIGTERM, then SIGKILL after `graceMs`. */
async function stopNodes(nodes: readonly NodeLayout[], graceMs: number): Promise<void> {
  await Promise.all(nodes.map((node) => stopProcess(node.pidFile, node.propertiesFile, graceMs)));
}

/**
 * Starts `nodes` (whose ports were found free) and waits for the cluster;
 * when it does not answer in time, restarts them once. On failure stops
 * them again, so no half-started node is left behind (their logs stay).
 */
async function startAndWait(cluster: Cluster, nodes: readonly NodeLayout[], timeoutMs: number, log: (line: string) => void): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    startNodes(cluster, nodes);
    try {
      await waitUntilReady(cluster, nodes, timeoutMs);
      return;
    } catch (error) {
      await stopNodes(nodes, 5000);
      if (!(error instanceof StartTimeout) || attempt === 2) throw error;
      log(`the cluster did not answer within ${timeoutMs / 1000} s (quorum not formed?); restarting it once`);
      await checkPortsFree(nodes);
    }
  }
}

/** The status of `cluster`'s nodes right now. */
async function describe(dir: string, record: ClusterRecord | undefined): Promise<ClusterStatus> {
  const layouts = record ? layoutOf(dir, record) : [];
  const nodes = await Promise.all(
    layouts.map(async (node): Promise<NodeStatus> => {
      const pid = nodePid(node);
      const answering = pid !== undefined && (await liveBrokerIds(node.port, 1000)) !== undefined;
      const { id, port, controllerPort, logFile } = node;
      return { id, port, controllerPort, pid, running: pid !== undefined, answering, logFile };
    }),
  );
  return {
    dir,
    kafkaVersion: record?.kafkaVersion,
    running: nodes.some((node) => node.running),
    bootstrapServers: bootstrapServers(layouts),
    nodes,
  };
}

/**
 * Fetches the Kafka broker jars with Maven unless they are already cached,
 * and returns their folder (`$ORDERLY_KAFKA_CACHE/<version>/libs`, by
 * default `<repo>/.cache/kafka/<version>/libs`).
 */
export function fetchJars(options: Pick<BrokerOptions, "log"> = {}): string {
  return ensureLibs(kafkaVersion(), options.log ?? defaultLog);
}

/**
 * Starts the cluster and waits until every node answers and sees all
 * brokers. Idempotent: when the cluster runs it only says so; when some of
 * its nodes stopped (see {@link killNode}) it starts those again. Fetches the
 * jars on first use, formats new storage, and retries the start once when
 * the cluster does not answer in time.
 *
 * @returns the cluster's status, with `bootstrapServers` for clients
 * @throws BrokerError naming what is wrong (Java or Maven missing, a port in
 *   use, a node that exited or did not answer, with the end of its log)
 */
export async function up(options: UpOptions = {}): Promise<ClusterStatus> {
  checkOptions(options);
  const log = options.log ?? defaultLog;
  const dir = clusterDir(options);
  const stored = readRecord(dir);
  if (stored && layoutOf(dir, stored).some((node) => nodePid(node) !== undefined)) {
    checkSameShape(stored, options, dir);
  }
  const version = kafkaVersion();
  const java = findJava();
  const libs = ensureLibs(version, log);
  const record = chooseRecord(dir, options, version, log);
  const cluster: Cluster = { dir, record, nodes: layoutOf(dir, record), java, libs };
  const stopped = cluster.nodes.filter((node) => nodePid(node) === undefined);
  const timeoutMs = (options.timeoutSeconds ?? (record.nodes > 1 ? 120 : 60)) * 1000;
  if (stopped.length === 0) {
    log(`Kafka is already running (${record.nodes} node(s)): ${bootstrapServers(cluster.nodes)}`);
    await waitUntilReady(cluster, [], timeoutMs);
    return describe(dir, record);
  }
  const started = Date.now();
  log(`starting Kafka ${version}: node(s) ${stopped.map((node) => node.id).join(", ")} in ${shown(dir)}`);
  await checkPortsFree(stopped);
  await prepareNodes(cluster);
  await startAndWait(cluster, stopped, timeoutMs, log);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  log(`Kafka ready in ${seconds} s: ${bootstrapServers(cluster.nodes)} (logs: ${shown(dir)}/node-*/server.log)`);
  return describe(dir, record);
}

/**
 * Stops every node of the cluster (SIGTERM, then SIGKILL after the grace
 * period). Idempotent: does nothing when nothing runs. With `purge`, also
 * deletes the cluster folder.
 */
export async function down(options: DownOptions = {}): Promise<void> {
  const log = options.log ?? defaultLog;
  const dir = clusterDir(options);
  const record = readRecord(dir);
  const running = record ? layoutOf(dir, record).filter((node) => nodePid(node) !== undefined) : [];
  if (running.length === 0) {
    log("Kafka is not running");
  } else {
    const started = Date.now();
    await stopNodes(running, (options.graceSeconds ?? DEFAULT_GRACE_SECONDS) * 1000);
    log(`stopped ${running.length} Kafka node(s) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  if (options.purge) {
    rmSync(dir, { recursive: true, force: true });
    log(`deleted ${shown(dir)}`);
  }
}

/**
 * Reports which nodes of the cluster run, on which ports, and whether they
 * answer. Never throws for a stopped or missing cluster: `running` is false.
 */
export async function status(options: Pick<BrokerOptions, "dir"> = {}): Promise<ClusterStatus> {
  const dir = clusterDir(options);
  return describe(dir, readRecord(dir));
}

/**
 * Stops one node of a running cluster, by default abruptly with SIGKILL (as
 * a crash would), and waits until it is gone. `up` starts it again.
 *
 * @throws BrokerError when the cluster has no node `nodeId`
 */
export async function killNode(nodeId: number, options: DownOptions & { signal?: NodeJS.Signals } = {}): Promise<void> {
  const dir = clusterDir(options);
  const record = readRecord(dir);
  const node = record ? layoutOf(dir, record).find((candidate) => candidate.id === nodeId) : undefined;
  if (!node) throw new BrokerError(`no Kafka node ${nodeId} in ${shown(dir)}`);
  const graceMs = (options.graceSeconds ?? DEFAULT_GRACE_SECONDS) * 1000;
  await stopProcess(node.pidFile, node.propertiesFile, graceMs, options.signal ?? "SIGKILL");
  (options.log ?? defaultLog)(`Kafka node ${nodeId} stopped`);
}

/** Prints a status report for people. */
function printStatus(report: ClusterStatus): void {
  if (report.nodes.length === 0) {
    console.log(`no Kafka cluster in ${shown(report.dir)}`);
    return;
  }
  console.log(`Kafka ${report.kafkaVersion ?? "?"}, ${report.nodes.length} node(s) in ${shown(report.dir)}`);
  for (const node of report.nodes) {
    const state = node.running ? `running (pid ${node.pid})${node.answering ? "" : ", not answering"}` : "stopped";
    console.log(`  node ${node.id}: ${state}  PLAINTEXT 127.0.0.1:${node.port}  controller 127.0.0.1:${node.controllerPort}`);
  }
  if (report.running) console.log(`bootstrap servers: ${report.bootstrapServers}`);
}

/** Parses a numeric option, naming it when it is not a number. */
function numberOption(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isFinite(number)) throw new BrokerError(`--${name} needs a number (got "${value}")`);
  return number;
}

const USAGE = `usage: npm run kafka -- <command> [options]
  up      [--nodes N] [--port P] [--dir D] [--timeout S]   start (or complete) the cluster and wait for it
  down    [--dir D] [--grace S] [--purge]                   stop every node (--purge: delete the folder)
  status  [--dir D] [--json]                                show the nodes; exits 1 when none runs (not with --json)
  kill    NODE_ID [--dir D] [--signal SIGTERM]              stop one node (default SIGKILL)
  fetch                                                     only fetch the Kafka jars
  topic create TOPIC [--partitions N] [--bootstrap H:P]      create a topic (an existing one is only reported)
  produce TOPIC FILE [--bootstrap H:P]                      produce FILE's lines, KEY<TAB>VALUE, in order
  consume TOPIC --count N [--timeout S] [--bootstrap H:P]   print N records (KEY<TAB>VALUE) from the start; fail after S s (60)
  (--bootstrap defaults to the cluster this tool runs; the folder is --dir, else $ORDERLY_KAFKA_DIR)`;

/** Runs the command line; returns the exit code. */
async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      nodes: { type: "string" },
      port: { type: "string" },
      dir: { type: "string" },
      timeout: { type: "string" },
      grace: { type: "string" },
      signal: { type: "string" },
      purge: { type: "boolean" },
      bootstrap: { type: "string" },
      partitions: { type: "string" },
      count: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [command, arg] = positionals;
  const common = { dir: values.dir };
  const downOptions = { ...common, graceSeconds: numberOption(values.grace, "grace") };
  switch (values.help ? "help" : command) {
    case "up":
      await up({
        ...common,
        nodes: numberOption(values.nodes, "nodes"),
        port: numberOption(values.port, "port"),
        timeoutSeconds: numberOption(values.timeout, "timeout"),
      });
      return 0;
    case "down":
      await down({ ...downOptions, purge: values.purge });
      return 0;
    case "status": {
      const report = await status(common);
      if (values.json) console.log(JSON.stringify(report, null, 2));
      else printStatus(report);
      return report.running || values.json ? 0 : 1;
    }
    case "kill": {
      const id = Number(arg);
      if (!arg || !Number.isInteger(id)) throw new BrokerError("kill needs a node id, e.g. kill 2");
      const signal = (values.signal ?? "SIGKILL") as NodeJS.Signals;
      await killNode(id, { ...downOptions, signal });
      return 0;
    }
    case "fetch":
      console.log(fetchJars());
      return 0;
    case "topic":
    case "produce":
    case "consume":
      return clientCommand(command ?? "", positionals.slice(1), values, common);
    default:
      console.log(USAGE);
      return values.help ? 0 : 2;
  }
}

/** `topic create`, `produce` and `consume`, against --bootstrap or the running cluster. */
async function clientCommand(
  command: string,
  args: string[],
  values: { bootstrap?: string; partitions?: string; count?: string; timeout?: string },
  common: Pick<BrokerOptions, "dir">,
): Promise<number> {
  const bootstrap = values.bootstrap ?? (await runningBootstrap(common));
  const [first, second] = args;
  if (command === "topic") {
    if (first !== "create" || !second) throw new BrokerError("usage: topic create TOPIC [--partitions N] [--bootstrap H:P]");
    const partitions = numberOption(values.partitions, "partitions") ?? 1;
    const nodes = bootstrap.split(",").length;
    console.log(await createTopic(bootstrap, second, partitions, Math.min(nodes, 3)));
    return 0;
  }
  if (command === "produce") {
    if (!first || !second) throw new BrokerError("usage: produce TOPIC FILE [--bootstrap H:P] (FILE: one record a line, KEY<TAB>VALUE)");
    console.log(await produceFile(bootstrap, first, second));
    return 0;
  }
  const count = numberOption(values.count, "count");
  if (!first || count === undefined) throw new BrokerError("usage: consume TOPIC --count N [--timeout S] [--bootstrap H:P]");
  await consumeTopic(bootstrap, first, count, numberOption(values.timeout, "timeout") ?? 60, (line) => console.log(line));
  return 0;
}

/** The bootstrap servers of the cluster in the folder, which must be running. */
async function runningBootstrap(options: Pick<BrokerOptions, "dir">): Promise<string> {
  const report = await status(options);
  if (!report.running || !report.bootstrapServers) {
    throw new BrokerError(`no Kafka cluster runs in ${shown(report.dir)}; start one (npm run kafka -- up) or give --bootstrap HOST:PORT`);
  }
  return report.bootstrapServers;
}

/** The message of an expected error (bad option, BrokerError), or the stack of an unexpected one. */
function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const badArgs = "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS");
  return error instanceof BrokerError || badArgs ? error.message : (error.stack ?? error.message);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(`kafka: error: ${errorText(error)}`);
      process.exit(1);
    },
  );
}
