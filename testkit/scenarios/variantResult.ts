import type { WorkedExampleVariant } from './workedExampleSettings.js';

/** One variant's figures. */
export interface VariantResult {
  readonly variant: WorkedExampleVariant;
  readonly events: number;
  readonly held: number;
  /** Calls the provider accepted. */
  readonly modelCalls: number;
  readonly rateLimitedResponses: number;
  /** Calls for events whose effect was already recorded. */
  readonly wastedModelCalls: number;
  /** Virtual ms when the last event finished. */
  readonly endMs: number;
  readonly lowerBoundMs: number;
  readonly redelivered: number;
  readonly redeliveredAlreadyApplied: number;
  readonly doubleEffects: number;
  readonly orderViolations: number;
  readonly parked: number;
}
