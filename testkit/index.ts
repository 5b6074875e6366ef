// orderly/testkit: drive a topology on virtual time, with crashes, and property-test it.
export { TopologyTestDriver } from './driver.js';
export type { DriverOptions, CrashOptions } from './driver.js';
export type { AppliedEffect, DriverMetrics } from './driverObservations.js';
export { TestInputTopic, TestOutputTopic } from './topics.js';
export type { TestRecord, PipeOptions } from './topics.js';
export { fakeModel } from './fakeModel.js';
export type { FakeModel, FakeModelOptions, ModelStats, ModelCall } from './fakeModel.js';
export { crashPoints } from './crashPoints.js';
export type { CrashPoint } from './crashPoints.js';
export { VirtualClock } from './virtualClock.js';
export { SeededRandom } from './seededRandom.js';
export * from './arbitraries.js';
export * from './invariants.js';
export { runWorkedExample, workedExampleVariants, workedExampleFixture, workedExampleLowerBoundMs } from './scenarios/workedExample.js';
export type { VariantResult, WorkedExampleVariant, WorkedExampleOptions } from './scenarios/workedExample.js';
export { runCrashScenario } from './crashScenario.js';
export type { CrashScenario, ScenarioCrash, ScenarioEvent, ScenarioRun } from './crashScenario.js';
