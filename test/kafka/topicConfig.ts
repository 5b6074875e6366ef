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
  const classpath = join(libsDir(kafkaVersion()), '*');
  const { stdout } = await run(findJava(), ['-cp', classpath, join(REPO, 'test', 'kafka', 'TopicConfig.java'), bootstrap, topic, name], { timeout: 60_000 });
  return stdout.trim().split('\n').at(-1)!;
}
