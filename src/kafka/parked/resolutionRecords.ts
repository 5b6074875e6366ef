import { checkResolution } from '../../engine/checkResolution.js';
import type { Resolution } from '../../engine/parkedKeys.js';
import type { OutRecord } from '../../ports/log.js';

// The control topic `<group>-resolutions`: requests to resolve a parked key, written by
// `orderly parked resolve|replay`, and the outcome the worker that owns the key's partition
// writes back for each. One partition, so every reader sees requests and outcomes in one order.

/** The control topic of a consumer group's resolutions. */
export function resolutionsTopic(group: string): string {
  return `${group}-resolutions`;
}

/** The parking a resolution is meant for: the key's head event and when it was (last) parked. */
export interface ResolutionTarget {
  /** The source topic. */
  readonly topic: string;
  readonly partition: number;
  /** The key's lane: the key, or `~no-key/<offset>` for an event without one. */
  readonly lane: string;
  /** The effect id of the parked head event the person decided on. */
  readonly effectId: string;
  /**
   * `parkedAtMs` of the key's parked state when the person looked: a key parked again at the
   * same event (a retry that failed again) has a later one, so an old resolution never applies twice.
   */
  readonly parkedAtMs: number;
}

/** Someone asks the owner of a partition to resolve one of its parked keys. */
export interface ResolutionRequest {
  readonly type: 'resolve';
  /** Unique; the outcome names it. */
  readonly id: string;
  readonly target: ResolutionTarget;
  readonly resolution: Resolution;
  /** Who asked (user@host by default) and when. */
  readonly by: string;
  readonly atMs: number;
}

/**
 * What the owner did with a request. `applied`: the key replays; `refused`: the engine refused the
 * resolution (a decision that fails the step's schema), the key stays parked; `stale`: the key is
 * no longer parked at that event (released, resolved by someone else, or parked again since).
 */
export type ResolutionStatus = 'applied' | 'refused' | 'stale';

export interface ResolutionOutcome {
  readonly type: 'outcome';
  /** The id of the request. */
  readonly id: string;
  readonly status: ResolutionStatus;
  readonly message: string;
  /** The worker that answered (its client id and pid), for the log. */
  readonly worker: string;
  readonly atMs: number;
}

export type ControlRecord = ResolutionRequest | ResolutionOutcome;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export function controlRecord(group: string, record: ControlRecord): OutRecord {
  return { topic: resolutionsTopic(group), key: record.id, value: encoder.encode(JSON.stringify(record)), partition: 0 };
}

/** Parses a record of the control topic; an unreadable one is an error naming what is wrong (the reader logs and skips it). */
export function parseControlRecord(value: Uint8Array | null): ControlRecord {
  if (value === null) throw new Error('control record has no value');
  type Loose = { id?: unknown; type?: unknown; status?: unknown; target?: Partial<ResolutionTarget>; resolution?: unknown };
  const parsed = JSON.parse(decoder.decode(value)) as Loose | null;
  if (typeof parsed !== 'object' || parsed === null || typeof parsed.id !== 'string') throw new Error('control record is not a JSON object with an id');
  if (parsed.type === 'outcome') {
    if (!['applied', 'refused', 'stale'].includes(parsed.status as string))
      throw new Error(`outcome ${parsed.id}: unknown status ${JSON.stringify(parsed.status)}`);
    return parsed as unknown as ResolutionOutcome;
  }
  if (parsed.type !== 'resolve') throw new Error(`control record ${parsed.id}: unknown type ${JSON.stringify(parsed.type)}`);
  const t = parsed.target;
  if (
    !t ||
    typeof t.topic !== 'string' ||
    !Number.isInteger(t.partition) ||
    typeof t.lane !== 'string' ||
    typeof t.effectId !== 'string' ||
    typeof t.parkedAtMs !== 'number'
  ) {
    throw new Error(`resolution ${parsed.id}: its target needs topic, partition, lane, effectId and parkedAtMs`);
  }
  checkResolution(`resolution ${parsed.id}`, parsed.resolution);
  return parsed as unknown as ResolutionRequest;
}

/** How a resolution reads in a log line or the CLI: `decision {...}`, `retry` or `discard`. */
export function describeResolution(resolution: Resolution): string {
  if ('decision' in resolution) return `decision ${JSON.stringify(resolution.decision)}`;
  return 'retry' in resolution ? 'retry' : 'discard';
}
