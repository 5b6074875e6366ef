/**
 * Finds Java, and fetches the Kafka broker jars from Maven Central through
 * Maven and `tools/kafka/pom.xml`.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BrokerError, REPO_ROOT } from "./layout.js";

const POM = join(REPO_ROOT, "tools", "kafka", "pom.xml");
const STAMP = ".pom.sha256";
const MIN_JAVA = 17;

/** The Kafka version that `tools/kafka/pom.xml` names. */
export function kafkaVersion(): string {
  const match = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(POM, "utf8"));
  if (!match?.[1]) throw new BrokerError(`${POM} has no <kafka.version> property`);
  return match[1];
}

/**
 * The folder that holds the broker jars: `$ORDERLY_KAFKA_CACHE/<version>/libs`,
 * by default `<repo>/.cache/kafka/<version>/libs`.
 */
export function libsDir(version: string): string {
  const cache = process.env.ORDERLY_KAFKA_CACHE ?? join(REPO_ROOT, ".cache", "kafka");
  return join(cache, version, "libs");
}

/** Returns the `java` to run (`$JAVA_HOME/bin/java`, else `java` on PATH) after checking it is Java 17 or newer. */
export function findJava(): string {
  const home = process.env.JAVA_HOME;
  const java = home && existsSync(join(home, "bin", "java")) ? join(home, "bin", "java") : "java";
  const run = spawnSync(java, ["-version"], { encoding: "utf8" });
  if (run.error) {
    throw new BrokerError(
      `Java not found (${java}): the Kafka broker needs Java ${MIN_JAVA} or newer. ` +
        "Install it (apt-get install -y openjdk-17-jre-headless, or bash scripts/setup.sh) or set JAVA_HOME.",
    );
  }
  const major = Number(/version "(?:1\.)?(\d+)/.exec(run.stderr)?.[1] ?? 0);
  if (major < MIN_JAVA) {
    throw new BrokerError(
      `${java} is Java ${major || "(unknown version)"}; Kafka 4 needs Java ${MIN_JAVA} or newer. ` +
        "Install openjdk-17-jre-headless or point JAVA_HOME at a newer JDK.",
    );
  }
  return java;
}

/** Fingerprint of the POM, so that a changed POM fetches the jars again. */
function pomHash(): string {
  return createHash("sha256").update(readFileSync(POM)).digest("hex");
}

/** True when `dir` holds the jars of the current POM. */
function libsPresent(dir: string): boolean {
  const stamp = join(dir, STAMP);
  return existsSync(stamp) && readFileSync(stamp, "utf8").trim() === pomHash();
}

/** Runs Maven's copy-dependencies into `target`; throws with Maven's output on failure. */
function copyDependencies(target: string): void {
  const args = ["-B", "-q", "-f", POM, "dependency:copy-dependencies", `-DoutputDirectory=${target}`];
  const run = spawnSync("mvn", args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (run.error) {
    throw new BrokerError(
      "Maven (mvn) not found: it is needed once to fetch the Kafka jars from Maven Central. " +
        "Install it (apt-get install -y maven, or bash scripts/setup.sh).",
    );
  }
  if (run.status !== 0) {
    const output = `${run.stdout}${run.stderr}`.trim().split("\n").slice(-30).join("\n");
    throw new BrokerError(`Maven could not fetch the Kafka jars (mvn ${args.join(" ")}):\n${output}`);
  }
}

/**
 * Makes sure the broker jars are in the cache and returns their folder.
 * Skips Maven when the jars of the current POM are already there; otherwise
 * fetches into a temporary folder and renames it, so an interrupted fetch
 * never looks complete.
 */
export function ensureLibs(version: string, log: (line: string) => void): string {
  const dir = libsDir(version);
  if (libsPresent(dir)) return dir;
  log(`fetching Kafka ${version} jars with Maven into ${dir}`);
  const started = Date.now();
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  try {
    copyDependencies(partial);
    writeFileSync(join(partial, STAMP), `${pomHash()}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(partial, dir);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  log(`fetched the jars in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return dir;
}
