import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { StateStore } from '../../graph/stores.js';
import type { OutRecord, TopicPartition } from '../../ports/log.js';
import type { Store } from '../../ports/store.js';
import { openLevelStore, type LocalStore } from '../../state/levelStore.js';
import type { KafkaSettings } from '../kafkaConfig.js';
import { ChangelogReader } from './changelogReader.js';
import { ChangelogStore, type RestoreReport } from './changelogStore.js';
import type { WrittenFormat } from './changelogWrite.js';

/** A worker's state before it runs: its LevelDB and the reader that restores partitions from their changelogs. */
export interface OpenedState {
  readonly local: LocalStore;
  readonly source: ChangelogReader;
}

/**
 * Opens the LevelDB in `stateDir` (created when missing; one process at a time) and connects the
 * changelog reader; a reader that cannot connect closes the LevelDB again.
 */
export async function openState(stateDir: string, settings: KafkaSettings, logger: Logger): Promise<OpenedState> {
  await mkdir(stateDir, { recursive: true });
  const local = await openLevelStore(stateDir);
  try {
    return { local, source: await ChangelogReader.connect(settings, logger.child({ component: 'changelog' })) };
  } catch (error) {
    await closeState(local, logger);
    throw error;
  }
}

/** What the changelog store needs of the log: where its records go, and whether a partition was lost. */
export interface ChangelogLog {
  produce(records: readonly OutRecord[]): Promise<void>;
  isLost(tp: TopicPartition): boolean;
}

/** The worker's stores, its group and who hears how each taken-over partition was restored. */
export interface ChangelogStoreFor {
  readonly group: string;
  readonly stores: readonly StateStore[];
  readonly logger: Logger;
  readonly onRestored?: ((report: RestoreReport) => void) | undefined;
  /** The oldest local checkpoint a restore reads from (ChangelogStoreOptions.checkpointMaxAgeMs). */
  readonly checkpointMaxAgeMs?: number | undefined;
  /** ChangelogStoreOptions.storedFormat. */
  readonly storedFormat?: WrittenFormat;
}

/**
 * The Store port the engine runs on: every state write goes to its changelog through the outputs'
 * producer (the log's produce), and each partition's state is restored from its changelogs when
 * this worker takes the partition over.
 */
export function changelogStoreOver(state: OpenedState, log: ChangelogLog, of: ChangelogStoreFor): ChangelogStore {
  return new ChangelogStore({
    local: state.local,
    group: of.group,
    stores: of.stores,
    produce: (records) => log.produce(records),
    source: state.source,
    logger: of.logger.child({ component: 'changelog' }),
    handedBackCleanly: (tp) => !log.isLost(tp),
    ...(of.onRestored ? { onRestored: of.onRestored } : {}),
    ...(of.checkpointMaxAgeMs !== undefined ? { checkpointMaxAgeMs: of.checkpointMaxAgeMs } : {}),
    ...(of.storedFormat !== undefined ? { storedFormat: of.storedFormat } : {}),
  });
}

/** Closes a store; a failure is logged, not thrown (the worker is stopping anyway). */
export async function closeState(store: Store, logger: Logger): Promise<void> {
  try {
    await store.close();
  } catch (error) {
    logger.warn({ err: error }, 'closing the state store failed');
  }
}
