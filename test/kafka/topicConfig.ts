// A topic's configuration value, read with the Java admin client of the broker's own jars: the
// node client (librdkafka) has no describeConfigs.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findJava, kafkaVersion, libsDir } from '../../tools/kafka/jars.js';
import { REPO } from './worker.js';

const run = promisify(execFile);

/** The value of `name` in `topic`'s configuration (e.g. cleanup.policy). */
export async function topicConfig(bootstrap: string, topic: string, name: string): Promise<string> {
  return (await topicConfigs(bootstrap, topic, [name]))[name]!;
}

/** The values of `names` in `topic`'s configuration, read in one go (each read starts a JVM). */
export async function topicConfigs(bootstrap: string, topic: string, names: readonly string[]): Promise<Record<string, string>> {
  const classpath = join(libsDir(kafkaVersion()), '*');
  const { stdout } = await run(findJava(), ['-cp', classpath, join(REPO, 'test', 'kafka', 'TopicConfig.java'), bootstrap, topic, ...names], {
    timeout: 60_000,
  });
  const values: Record<string, string> = {};
  for (const line of stdout.trim().split('\n')) {
    const at = line.indexOf('=');
    const name = line.slice(0, at);
    if (at > 0 && names.includes(name)) values[name] = line.slice(at + 1);
  }
  return values;
}
