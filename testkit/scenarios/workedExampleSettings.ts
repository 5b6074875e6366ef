import { SeededRandom } from '../seededRandom.js';
import type { Dispute } from './disputes.js';

export const workedExampleVariants = ['retry-after', 'crash-interval-commit', 'crash-commit-each', 'immediate-retry', 'retry-topic', 'declared-limit'] as const;
export type WorkedExampleVariant = (typeof workedExampleVariants)[number];

/** The worked example's fixed numbers: 3 partitions of 8 events, a model of 6 calls per 10 s at 4 s each. */
export const workedExampleFixture = {
  topic: 'disputes',
  partitions: 3,
  limit: { calls: 6, windowMs: 10_000 },
  latencyMs: 4_000,
  maxInFlight: 3,
  attempts: 3,
  retryDelayMs: 1_000,
  crashAtMs: 25_000,
  restartAfterMs: 5_000,
  commitEveryMs: 5_000,
  /** The accounts of each partition's events, in offset order. Event 2 of partition 1 is poison. */
  keys: [
    ['acct-01', 'acct-02', 'acct-03', 'acct-01', 'acct-04', 'acct-02', 'acct-05', 'acct-03'],
    ['acct-11', 'acct-12', 'acct-13', 'acct-11', 'acct-13', 'acct-14', 'acct-13', 'acct-12'],
    ['acct-21', 'acct-22', 'acct-23', 'acct-24', 'acct-21', 'acct-25', 'acct-22', 'acct-26'],
  ],
  poison: { partition: 1, offset: 2 },
} as const;

/**
 * Every setting of the worked example. At the defaults (and seed 0) the events are the fixture's;
 * any other partitions, events, keys, poison events or seed draw the events from the seed.
 */
export interface WorkedExampleSettings {
  readonly variant: WorkedExampleVariant;
  readonly partitions: number;
  readonly eventsPerPartition: number;
  /** Distinct keys each partition's events are drawn from. */
  readonly keysPerPartition: number;
  /** Events whose decision never passes the schema. */
  readonly poisonEvents: number;
  readonly maxInFlight: number;
  /** The model's limit: calls per fixed window. */
  readonly callsPerWindow: number;
  readonly windowMs: number;
  /** How long an accepted call takes. */
  readonly latencyMs: number;
  readonly attempts: number;
  readonly retryDelayMs: number;
  /** `each`, or a commit every that many ms; `undefined`: the variant's (`each` for crash-commit-each, else 5,000 ms). */
  readonly commit: 'each' | number | undefined;
  /** When the crash variants crash. */
  readonly crashAtMs: number;
  /** How long after the crash the engine restarts. */
  readonly restartAfterMs: number;
  /** Seeds the engine's random, the model and, off the fixture, the events. */
  readonly seed: number;
}

/** The settings of `orderly scenario worked-example` for one variant. */
export function defaultWorkedExampleSettings(variant: WorkedExampleVariant = 'retry-after'): WorkedExampleSettings {
  const f = workedExampleFixture;
  return {
    variant,
    partitions: f.partitions,
    eventsPerPartition: f.keys[0].length,
    keysPerPartition: 5,
    poisonEvents: 1,
    maxInFlight: f.maxInFlight,
    callsPerWindow: f.limit.calls,
    windowMs: f.limit.windowMs,
    latencyMs: f.latencyMs,
    attempts: f.attempts,
    retryDelayMs: f.retryDelayMs,
    commit: undefined,
    crashAtMs: f.crashAtMs,
    restartAfterMs: f.restartAfterMs,
    seed: 0,
  };
}

/** The commit a variant makes when the settings name none: `each` for crash-commit-each, else every 5,000 ms. */
export function variantCommit(variant: WorkedExampleVariant): 'each' | number {
  return variant === 'crash-commit-each' ? 'each' : workedExampleFixture.commitEveryMs;
}

type NumericSetting = Exclude<keyof WorkedExampleSettings, 'variant' | 'commit'>;

/** The whole-number settings and the range each must lie in (inclusive), with a short label. */
export const numericSettingRanges: Readonly<Record<NumericSetting, { min: number; max: number; label: string }>> = {
  partitions: { min: 1, max: 8, label: 'partitions' },
  eventsPerPartition: { min: 1, max: 60, label: 'events per partition' },
  keysPerPartition: { min: 1, max: 30, label: 'keys per partition' },
  poisonEvents: { min: 0, max: 20, label: 'poison events' },
  maxInFlight: { min: 1, max: 20, label: 'maxInFlight' },
  callsPerWindow: { min: 1, max: 200, label: 'calls per window' },
  windowMs: { min: 100, max: 120_000, label: 'window (ms)' },
  latencyMs: { min: 0, max: 60_000, label: 'call latency (ms)' },
  attempts: { min: 1, max: 10, label: 'attempts' },
  retryDelayMs: { min: 0, max: 60_000, label: 'retry delay (ms)' },
  crashAtMs: { min: 0, max: 600_000, label: 'crash at (ms)' },
  restartAfterMs: { min: 0, max: 600_000, label: 'restart after (ms)' },
  seed: { min: 0, max: 2 ** 31 - 1, label: 'seed' },
};

/**
 * Reads settings from a URL query (`?variant=retry-topic&latencyMs=2000&commit=each`): absent
 * names keep the variant's defaults. Throws a RangeError naming the setting, the value and the
 * range when a value is not allowed.
 */
export function parseWorkedExampleSettings(query: URLSearchParams): WorkedExampleSettings {
  const variant = query.get('variant') ?? 'retry-after';
  if (!(workedExampleVariants as readonly string[]).includes(variant)) {
    throw new RangeError(`worked example: no variant '${variant}'; use one of ${workedExampleVariants.join(', ')}`);
  }
  const settings: Record<string, unknown> = { ...defaultWorkedExampleSettings(variant as WorkedExampleVariant) };
  for (const [name, range] of Object.entries(numericSettingRanges)) {
    const text = query.get(name);
    if (text === null || text === '') continue;
    const value = Number(text);
    if (!Number.isInteger(value) || value < range.min || value > range.max) {
      throw new RangeError(`worked example: ${name} must be a whole number from ${range.min} to ${range.max}, got '${text}'`);
    }
    settings[name] = value;
  }
  const commit = query.get('commit');
  if (commit !== null && commit !== '') {
    const everyMs = Number(commit);
    if (commit !== 'each' && !(Number.isInteger(everyMs) && everyMs >= 1 && everyMs <= 600_000)) {
      throw new RangeError(`worked example: commit must be 'each' or a whole number of ms from 1 to 600000, got '${commit}'`);
    }
    settings.commit = commit === 'each' ? 'each' : everyMs;
  }
  return settings as unknown as WorkedExampleSettings;
}

/** The URL query of settings: only what differs from the variant's defaults, so a default run is `?variant=NAME`. */
export function workedExampleQuery(settings: WorkedExampleSettings): URLSearchParams {
  const defaults = defaultWorkedExampleSettings(settings.variant);
  const query = new URLSearchParams({ variant: settings.variant });
  for (const name of Object.keys(numericSettingRanges) as NumericSetting[]) {
    if (settings[name] !== defaults[name]) query.set(name, String(settings[name]));
  }
  if (settings.commit !== undefined) query.set('commit', String(settings.commit));
  return query;
}

/** One event of the run, as piped. */
export interface WorkedExampleEvent {
  readonly partition: number;
  readonly offset: number;
  readonly key: string;
  readonly dispute: Dispute;
}

/** True when the settings' events are the fixture's. */
function onFixture(s: WorkedExampleSettings): boolean {
  const d = defaultWorkedExampleSettings();
  return (
    s.partitions === d.partitions &&
    s.eventsPerPartition === d.eventsPerPartition &&
    s.keysPerPartition === d.keysPerPartition &&
    s.poisonEvents === d.poisonEvents &&
    s.seed === 0
  );
}

/** The events of a run: the fixture's at the defaults, else drawn from the seed. */
export function workedExampleEvents(settings: WorkedExampleSettings = defaultWorkedExampleSettings()): WorkedExampleEvent[] {
  const layout = onFixture(settings) ? fixtureLayout() : drawnLayout(settings);
  return layout.keys.flatMap((partitionKeys, partition) =>
    partitionKeys.map((account, offset) => ({
      partition,
      offset,
      key: account,
      dispute: {
        disputeId: `d-${partition}-${offset}`,
        account,
        amount: 20 + 15 * offset,
        reason: layout.poison.has(`${partition}/${offset}`) ? 'unparseable' : offset % 3 === 0 ? 'fraud' : 'not-received',
      },
    })),
  );
}

interface Layout {
  readonly keys: readonly (readonly string[])[];
  /** `partition/offset` of each poison event. */
  readonly poison: ReadonlySet<string>;
}

function fixtureLayout(): Layout {
  const { keys, poison } = workedExampleFixture;
  return { keys, poison: new Set([`${poison.partition}/${poison.offset}`]) };
}

function drawnLayout(s: WorkedExampleSettings): Layout {
  const random = new SeededRandom(s.seed).derive('events');
  const keys = Array.from({ length: s.partitions }, (_, p) =>
    Array.from({ length: s.eventsPerPartition }, () => `acct-${p}-${random.int(1, s.keysPerPartition)}`),
  );
  const positions = keys.flatMap((partitionKeys, p) => partitionKeys.map((_, o) => `${p}/${o}`));
  const poison = new Set<string>();
  const wanted = Math.min(s.poisonEvents, positions.length);
  while (poison.size < wanted) poison.add(positions[random.int(0, positions.length - 1)]!);
  return { keys, poison };
}

/**
 * The least virtual time any schedule can finish in: every call that must be accepted (one per
 * event that is neither poison nor held behind a poison event of its key, plus each poison
 * event's attempts) fits in windows of `callsPerWindow`, and the last window's calls take
 * `latencyMs`.
 */
export function workedExampleLowerBoundMs(settings: WorkedExampleSettings = defaultWorkedExampleSettings()): number {
  const parkedLanes = new Set<string>();
  let calls = 0;
  for (const e of workedExampleEvents(settings)) {
    const lane = `${e.partition}/${e.key}`;
    if (parkedLanes.has(lane)) continue; // held: never called
    if (e.dispute.reason === 'unparseable') {
      parkedLanes.add(lane);
      calls += settings.attempts;
    } else {
      calls += 1;
    }
  }
  if (calls === 0) return 0;
  return (Math.ceil(calls / settings.callsPerWindow) - 1) * settings.windowMs + settings.latencyMs;
}
