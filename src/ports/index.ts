export type { TopicPartition, Headers, LogRecord, OutRecord, CommitOffset, AssignedPartition, AtomicOptions, LogListener, Log } from './log.js';
export { partitionId, CommitRefusedError, isCommitRefused } from './log.js';
export type { Clock, Timer } from './clock.js';
export { sleep, abortable } from './clock.js';
export type { Store, StoreOp } from './store.js';
export type { Random } from './random.js';
