import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const PROJECT = join(REPO, 'benchmarks', 'peers', 'java');
const STAMP = '.sources.sha256';

/** The Maven modules that hold a contender, each with its main class. */
export const JAVA_MODULES = {
  kafkaStreams: { module: 'kafka-streams', mainClass: 'orderly.bench.peers.KafkaStreamsContender' },
  parallelConsumer: { module: 'parallel-consumer', mainClass: 'orderly.bench.peers.ParallelConsumerContender' },
} as const;

export type JavaContender = keyof typeof JAVA_MODULES;

function filesUnder(dir: string): string[] {
  return readdirSync(dir)
    .flatMap((name) => {
      const path = join(dir, name);
      if (name === 'target') return [];
      return statSync(path).isDirectory() ? filesUnder(path) : [path];
    })
    .sort();
}

/** A fingerprint of the Java project's POMs and sources: a changed file builds again. */
function sourcesHash(): string {
  const hash = createHash('sha256');
  for (const file of filesUnder(PROJECT)) hash.update(relative(PROJECT, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

/**
 * Builds the Java contenders with Maven (fetching Kafka Streams, Parallel Consumer and their
 * dependencies from Maven Central on first use) into `$ORDERLY_PEERS_CACHE` (default
 * `<repo>/.cache/peers`), unless the build of the current sources is already there. Returns the
 * folder that holds `<module>/classes` and `<module>/libs`.
 */
export function ensureJavaBuild(log: (line: string) => void): string {
  const dir = process.env.ORDERLY_PEERS_CACHE ?? join(REPO, '.cache', 'peers');
  const hash = sourcesHash();
  const stamp = join(dir, STAMP);
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === hash) return dir;
  log(`building the Java contenders with Maven into ${dir}`);
  const started = performance.now();
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  try {
    const args = ['-B', '-q', '-f', join(PROJECT, 'pom.xml'), 'package', `-Dpeers.out=${partial}`];
    const run = spawnSync('mvn', args, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
    if (run.error)
      throw new Error(
        'bench:peers: Maven (mvn) not found: it builds the Java contenders once. Install it (apt-get install -y maven, or bash scripts/setup.sh).',
      );
    if (run.status !== 0) {
      const output = `${run.stdout}${run.stderr}`.trim().split('\n').slice(-30).join('\n');
      throw new Error(`bench:peers: Maven could not build the Java contenders (mvn ${args.join(' ')}):\n${output}`);
    }
    writeFileSync(join(partial, STAMP), `${hash}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(partial, dir);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  log(`built the Java contenders in ${((performance.now() - started) / 1_000).toFixed(1)} s`);
  return dir;
}

/** The class path of a Java contender in a build folder. */
export function javaClasspath(buildDir: string, contender: JavaContender): string {
  const module = join(buildDir, JAVA_MODULES[contender].module);
  return `${join(module, 'classes')}:${join(module, 'libs', '*')}`;
}
