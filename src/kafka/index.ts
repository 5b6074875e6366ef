// orderly/kafka, the Kafka transport: the Log port over @confluentinc/kafka-javascript, and a worker that runs a topology on it.
export { runTopology } from './runner.js';
export type { RunTopologyOptions, RunningTopology } from './runner.js';
export { KafkaLog } from './log/kafkaLog.js';
export type { KafkaLogOptions } from './log/kafkaLog.js';
export type { KafkaSettings, LibrdkafkaConfig } from './kafkaConfig.js';
export { ensureTopics, TopicError, CHANGELOG_TOPIC_CONFIG } from './topics.js';
export { BootstrapError, checkBootstrap, parseBootstrap } from './bootstrapCheck.js';
export type { BootstrapCheckOptions, BootstrapServer } from './bootstrapCheck.js';
export type { TopicPlan } from './topics.js';
export { systemClock } from './systemClock.js';
export { systemRandom } from './systemRandom.js';
export { ChangelogStore } from './changelog/changelogStore.js';
export type { ChangelogStoreOptions, ChangelogSource, RestoreReport } from './changelog/changelogStore.js';
export { ChangelogReader } from './changelog/changelogReader.js';
export { checkedChangelogTopic, fromChangelogRecord, changelogRecordWrites, ChangelogNameError } from './changelog/changelogRecords.js';
export { changelogTopic, toChangelogRecord } from './changelog/changelogWrite.js';
export type { WrittenFormat } from './changelog/changelogWrite.js';
export { CARRIED_EFFECTS_HEADER } from './changelog/carriedEffects.js';
