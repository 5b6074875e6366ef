// Global set-up of the Kafka tests (the `kafka` project in vitest.config.ts): compiles the CLI and
// the example (the tests run ./bin/orderly as a child process) unless ORDERLY_TEST_BUILT=1 says
// that dist/ is compiled already (scripts/test.sh), then starts a one-node Apache
// Kafka broker of their own on port 19092 with tools/kafka/broker.ts (fetching its jars with Maven
// on first use), and stops and deletes it afterwards.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { down, up } from '../../tools/kafka/broker.js';
import { REPO } from './worker.js';

const PORT = Number(process.env.ORDERLY_TEST_KAFKA_PORT ?? 19092);
const DIR = join(REPO, '.orderly', 'kafka-test');

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBootstrap: string;
    /** The broker's folder, for the broker tool's commands (ORDERLY_KAFKA_DIR). */
    kafkaDir: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const log = (line: string) => console.log(`[kafka tests] ${line}`);
  // scripts/test.sh compiles before it starts the tests, and runs other tests beside these that
  // read dist/: it says so (ORDERLY_TEST_BUILT=1) rather than have dist/ rewritten under them.
  if (process.env.ORDERLY_TEST_BUILT === '1') log('dist/ is compiled already (ORDERLY_TEST_BUILT=1)');
  else {
    log('compiling (npm run build): the tests run ./bin/orderly');
    execFileSync('npm', ['run', '-s', 'build'], { cwd: REPO, stdio: 'inherit' });
  }
  const cluster = await up({ port: PORT, dir: DIR, log });
  project.provide('kafkaBootstrap', cluster.bootstrapServers);
  project.provide('kafkaDir', DIR);
  return async () => {
    await down({ dir: DIR, purge: true, graceSeconds: 10, log });
  };
}
