// orderly/testkit: drive a topology on virtual time, with crashes, and property-test it.
export { TopologyTestDriver, driverModes } from './driver.js';
export type { DriverOptions, DriverMode, DriverFaults, CrashOptions, PendingCrash, RestartState } from './driver.js';
export type {
  AppliedEffect,
  CommitObserved,
  DiscardObserved,
  DriverBreaches,
  DriverMetrics,
  ObservedModelCall,
  ObservedOutcome,
  ResolutionObserved,
} from './driverObservations.js';
export { TestInputTopic, TestOutputTopic } from './topics.js';
export type { TestRecord, PipeOptions } from './topics.js';
export { fakeModel } from './fakeModel.js';
export type { FakeModel, FakeModelOptions, ModelStats, ModelCall, RefusalDelivered } from './fakeModel.js';
export { crashPoints } from './crashPoints.js';
export type { CrashPoint } from './crashPoints.js';
export { VirtualClock } from './virtualClock.js';
export { SeededRandom } from './seededRandom.js';
export * from './arbitraries.js';
export * from './invariants.js';
export {
  runWorkedExample,
  runWorkedExampleTimeline,
  workedExampleVariants,
  workedExampleFixture,
  workedExampleLowerBoundMs,
  defaultWorkedExampleSettings,
  parseWorkedExampleSettings,
  workedExampleQuery,
} from './scenarios/workedExample.js';
export type { VariantResult, WorkedExampleVariant, WorkedExampleSettings, WorkedExampleOptions } from './scenarios/workedExample.js';
export type { TimelineMark, WorkedExampleTimeline } from './scenarios/workedExampleTimeline.js';
export { runCrashScenario } from './crashScenario.js';
export type { CrashScenario, ScenarioCrash, ScenarioEvent, ScenarioFaults, ScenarioRun } from './crashScenario.js';
export { topologyProperty, keyedEvents, TopologyPropertyError } from './topologyProperty.js';
export type { TopologyProperty, TopologyPropertyOptions, UserInvariant, ResolutionOptions } from './topologyProperty.js';
export { checkTopologyRun, topologyInvariants } from './topologyInvariants.js';
export type { TopologyInvariant, TopologyCheck } from './topologyInvariants.js';
export type { TopologyEvent, PlacedEvent, TopologyRun, TopologyRunInput, TopologyBuilder, StepDecide, ModelStandIn, ResolutionKind } from './topologyRun.js';
export type { ReplayCrash } from './faultSchedule.js';
