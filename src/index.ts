// orderly: the public API. The DSL builds a Topology; the Engine runs it over the ports.
// The Kafka runner and log are orderly/kafka (src/kafka/index.ts): importing orderly loads no native client.
export { stream, StreamBuilder } from './dsl/stream.js';
export type {
  StreamOptions,
  KeyedSerialOptions,
  AgentStepOptions,
  ParkOptions,
  ToOptions,
  RespondOptions,
  NameOption,
  ApplyOnceOptions,
  ShadowOptions,
  FallbackOptions,
  NoDecisions,
} from './dsl/stream.js';
export { Topology } from './graph/topology.js';
export { TopologyError } from './dsl/topologyError.js';
export { RateLimited, isRateLimited } from './graph/rateLimited.js';
export { effect } from './dsl/effect.js';
export type { EffectOptions } from './dsl/effect.js';
export type { Effect, EffectContext, StateTable } from './graph/effect.js';
export { json, string } from './graph/serde.js';
export type { Serde } from './graph/serde.js';
export type {
  CallLimit,
  DecideContext,
  DecideFn,
  Decided,
  Decisions,
  DecidedBy,
  Disposition,
  DurableStepContext,
  HandlerFn,
  RateLimit,
  RecordMeta,
  EffectIdContext,
  RuleContext,
  RuleFn,
} from './graph/nodes.js';
export { Engine } from './engine/engine.js';
export type { EngineOptions, CommitPolicy, ParkedKeyInfo, StopOptions } from './engine/engine.js';
export { Outcome, finishedOutcomes } from './engine/outcomes.js';
export type { OutcomeEvent, EngineObserver, ModelCallResult } from './engine/outcomes.js';
export type { EngineStatus, PartitionStatus, BudgetStatus } from './engine/engineStatus.js';
export { combineObservers } from './engine/combineObservers.js';
export type { EngineMetrics } from './engine/metrics.js';
export type { Resolution, ParkedEvent, ParkedKeyState } from './engine/parkedKeys.js';
export { EFFECT_ID_HEADER } from './engine/outputs.js';
export type { ShadowRecord } from './engine/shadowRecords.js';
export type { CircuitState } from './engine/circuitBreaker.js';
export type { EffectRecord } from './engine/outputs.js';
export { PARK_REASON_HEADER } from './engine/parkRecords.js';
export { DEAD_LETTER_ERROR_HEADER, DEAD_LETTER_SOURCE_HEADER, DEAD_LETTER_ATTEMPTS_HEADER, DEAD_LETTER_ERRORS_HEADER } from './engine/deadLetters.js';
export { JOB_ID_HEADER, JOB_SCHEMA_VERSION, jobIdOf } from './engine/jobRecords.js';
export type { JobEnd, StatusBody, ResponseBody } from './engine/jobRecords.js';
export type { LastCall } from './engine/statusUpdates.js';
export { openLevelStore, openMemoryStore, StateDirectoryError } from './state/levelStore.js';
export { StoredFormatError, STORED_FORMAT_VERSION } from './state/storedFormat.js';
export { stateKeys } from './state/stateKeys.js';
export type { KeyKind, ParsedKey } from './state/stateKeys.js';
export { topologyStores } from './graph/stores.js';
export type { StateStore, StoreKind } from './graph/stores.js';
export * from './ports/index.js';
