import type { CommitOffset, Log, LogListener, OutRecord, TopicPartition } from '../../../src/ports/log.js';

/**
 * A Log that assigns one partition on subscribe (with `committed`, as read back at assignment)
 * and otherwise only records what the engine asks of it: the test drives the engine through
 * `listener()`. `atomic`: it offers units, as an exactly-once log does (each runs as it is).
 */
export function handDrivenLog(tp: TopicPartition, options: { atomic?: boolean; committed?: { offset: number; metadata?: string } } = {}) {
  let listener: LogListener | undefined;
  const commits: CommitOffset[][] = [];
  const produced: OutRecord[] = [];
  const log: Log = {
    subscribe: async (_topics, l) => {
      listener = l;
      await l.assigned([options.committed ? { ...tp, committed: options.committed } : tp]);
    },
    pause: () => undefined,
    resume: () => undefined,
    commit: async (offsets) => void commits.push([...offsets]),
    produce: async (records) => void produced.push(...records),
    highWatermark: () => undefined,
    close: async () => undefined,
    ...(options.atomic ? { atomic: <T>(work: () => Promise<T>) => work() } : {}),
  };
  const subscribed = (): LogListener => {
    if (!listener) throw new Error('handDrivenLog: the engine has not subscribed yet');
    return listener;
  };
  return { log, commits, produced, listener: subscribed };
}
