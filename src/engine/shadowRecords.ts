import type { OutRecord } from '../ports/log.js';
import type { EngineEvent } from './events.js';
import { EFFECT_ID_HEADER } from './outputs.js';

/**
 * A record of the shadow topic (`<source topic>.shadow`): one per event whose agent step ran in
 * shadow, keyed like the event, with header `orderly-effect-id`. JSON.
 */
export interface ShadowRecord {
  /** The record's format: 1. */
  readonly version: 1;
  /** The agent step that ran in shadow. */
  readonly step: string;
  /** The shadow operator's name. */
  readonly shadow: string;
  readonly effectId: string;
  /** The agent's decision; absent when its attempts ran out (then `agentError`). */
  readonly agent?: unknown;
  /** The last error of the agent's attempts, when they ran out. */
  readonly agentError?: string;
  /** The decision applied: the handler's. */
  readonly applied: unknown;
  /** Whether the agent's decision agrees with the applied one; absent when the agent gave none. */
  readonly agrees?: boolean;
  /** When the comparison was made (the engine's clock). */
  readonly atMs: number;
}

/** The shadow record of one event, as an output sent with the event's end. */
export function shadowRecord(topic: string, event: EngineEvent, record: ShadowRecord): OutRecord {
  return {
    topic,
    key: event.key,
    value: new TextEncoder().encode(JSON.stringify(record)),
    headers: { [EFFECT_ID_HEADER]: event.effectId },
  };
}
