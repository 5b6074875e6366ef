import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CHANGELOG_TOPIC_CONFIG } from '../../src/kafka/topics.js';
import type { Progress } from '../progress.js';
import type { Goal } from '../report.js';
import { changelogCensus, changelogPartitions, cleanerCaughtUp, type ChangelogCensus } from './changelogCensus.js';
import { killVariants, runVariant, type MeasuredVariant } from './child.js';
import { prefill } from './prefill.js';
import type { ParentMessage, VariantSpec } from './spec.js';

/**
 * The soak (issue 15 §3): one orderly worker through many events, its state measured when its
 * commits pass half of them and all of them: the state directory's size, and its changelog
 * topics' size on the broker's disk. Bounded state means the second half adds little to either.
 */
export interface SoakFigures {
  /** The state directory's disk use when half of the soak's events were committed (at 1,000,000 of the default 2,000,000), MiB. */
  readonly stateDirMbAt1M: number;
  /** The same when all were committed, MiB. */
  readonly stateDirMbAt2M: number;
  /** The disk use of the worker's changelog topics in the broker's log directory at half, MiB. */
  readonly changelogMbAt1M: number;
  /** The same at the end, MiB. */
  readonly changelogMbAt2M: number;
}

/** The sizes measured at one point (MiB; disk use, and the changelogs' `.log` files alone too). */
export interface SoakSizes {
  readonly stateDirMb: number;
  readonly changelogMb: number;
  readonly changelogLogFilesMb: number;
}

/** One of the two measures (at half and at the end): as the worker stopped, then once compaction had time to run. */
export interface SoakCheckpoint {
  /** Events committed when the figure was taken. */
  readonly mark: number;
  /** The moment the input ran out, `nudgeEvents` before the mark: sizes and what the changelogs hold. */
  readonly atPause: SoakSizes & { readonly atSeconds: number; readonly census: ChangelogCensus };
  /** After the pause, the nudge and the cleaner's catching up: the figure. */
  readonly settled: SoakSizes & {
    readonly atSeconds: number;
    /** False when the cleaner had not caught up within the bounded wait (the figure is then taken anyway). */
    readonly cleanerCaughtUp: boolean;
    /** From the nudge's last commit to the measure. */
    readonly waitedSeconds: number;
    readonly census: ChangelogCensus;
  };
}

export interface SoakDetails {
  readonly events: number;
  /** The changelog topics' settings the worker created them with, over orderly's. */
  readonly changelogConfig: Readonly<Record<string, string>>;
  /** Events written after each pause, once every active segment is older than `segment.ms`, so that their first writes roll the segments. */
  readonly nudgeEvents: number;
  /** The two measures the figures come from. */
  readonly checkpoints: readonly SoakCheckpoint[];
  /** Sizes at every tenth of the events as the worker runs through them (the pauses' marks too), seconds since the worker's first record: the shape of the growth. */
  readonly marks: ReadonlyArray<SoakSizes & { readonly mark: number; readonly atSeconds: number }>;
  /** The worker's run; its rate counts the pauses and means nothing here. */
  readonly worker: MeasuredVariant;
}

export interface SoakOptions {
  /** The worker's settings; the soak sets its topic's input, `ends`, `events` and marks. */
  readonly spec: Omit<VariantSpec, 'marks' | 'events' | 'ends' | 'staged'>;
  readonly events: number;
  readonly partitions: number;
  readonly keys: number;
  /** Events written after each pause to roll the changelogs' segments (at most a twentieth of the events). */
  readonly nudgeEvents: number;
  /** The longest wait for the cleaner to catch up at each measure, ms. */
  readonly settleTimeoutMs: number;
  /** The broker's log directory (`log.dirs`), where the changelog topics' partitions are folders. */
  readonly brokerDataDir: string;
  readonly progress: Progress;
  readonly timeoutMs: number;
}

/**
 * Runs the soak: writes its input in stages while one worker runs through it, and measures its
 * state when its commits reach half of the events and all of them, each time once compaction has
 * been given time to run (docs/benchmarks.md, "The soak"):
 *
 * 1. the input stops `nudgeEvents` short of the mark; the worker runs dry and idles;
 * 2. once every changelog partition's active segment is older than `segment.ms`, the last
 *    `nudgeEvents` are written: their changelog records roll every active segment that the soak
 *    writes to (Kafka rolls a segment only at a write), so all but those few records are cleanable;
 * 3. when the worker has committed them (the mark), the benchmark waits until the broker's cleaner
 *    has caught up (every rolled segment cleaned or too little dirty to be picked, no cleaned-away
 *    file waiting for deletion), at most `settleTimeoutMs`, and measures.
 */
export async function runSoak(options: SoakOptions): Promise<{ figures: SoakFigures; details: SoakDetails }> {
  const { spec, brokerDataDir, events, progress } = options;
  const config = { ...CHANGELOG_TOPIC_CONFIG, ...spec.changelogConfig };
  const segmentMs = Number(config['segment.ms']);
  const minCleanableRatio = Number(config['min.cleanable.dirty.ratio']);
  const half = Math.floor(events / 2);
  const nudge = Math.max(1, Math.min(options.nudgeEvents, Math.floor(events / 20)));
  const fill = (from: number, count: number) =>
    prefill(spec.bootstrap, { topic: spec.topic, events: count, partitions: options.partitions, keys: options.keys, ...(from > 0 ? { from } : {}) }, progress);
  const ends = await fill(0, half - nudge);

  const startedAt = performance.now();
  const seconds = () => Math.round((performance.now() - startedAt) / 100) / 10;
  const sizes = async (): Promise<SoakSizes> => {
    const [stateDir, changelog] = await Promise.all([diskUse(spec.stateDir, () => true), changelogDiskUse(brokerDataDir, spec.group)]);
    return { stateDirMb: mib(stateDir.blocks), changelogMb: mib(changelog.blocks), changelogLogFilesMb: mib(changelog.logBytes) };
  };
  const marks: Array<SoakDetails['marks'][number]> = [];
  const checkpoints: SoakCheckpoint[] = [];
  const pauses = new Map<number, SoakCheckpoint['atPause']>();
  // The soak's steps, one after another, each started by a mark; a failed one stops the worker.
  let steps: Promise<void> = Promise.resolve();
  let failed: Error | undefined;
  const fail = (error: unknown) => {
    failed ??= error as Error;
    killVariants();
  };
  const onMark = (mark: number, tell: (message: ParentMessage) => void) => {
    const at = performance.now();
    const atSeconds = seconds();
    steps = steps.then(async () => {
      if (failed) return;
      try {
        const measured = await sizes();
        marks.push({ mark, atSeconds, ...measured });
        if (mark === half - nudge || mark === events - nudge) {
          pauses.set(mark + nudge, { atSeconds, ...measured, census: await changelogCensus(brokerDataDir, spec.group) });
          // Every active segment's first record is older than the pause: past segment.ms, the next write to it rolls it.
          const waitMs = at + segmentMs + Math.min(2_000, segmentMs) - performance.now();
          if (waitMs > 0) await sleep(waitMs);
          await fill(mark, nudge);
        } else if (mark === half || mark === events) {
          const settleStart = performance.now();
          const caughtUp = await cleanerSettles(brokerDataDir, spec.group, minCleanableRatio, options.settleTimeoutMs);
          const settled = {
            atSeconds: seconds(),
            ...(await sizes()),
            cleanerCaughtUp: caughtUp,
            waitedSeconds: Math.round((performance.now() - settleStart) / 1_000),
          };
          checkpoints.push({ mark, atPause: pauses.get(mark)!, settled: { ...settled, census: await changelogCensus(brokerDataDir, spec.group) } });
          // The second half's input is written while the worker runs through it; the marks it passes meanwhile are measured as they come.
          if (mark === half) fill(half, events - nudge - half).catch(fail);
          else tell({ type: 'stop' });
        }
      } catch (error) {
        fail(error);
      }
    });
  };
  // Every tenth too, to show the shape of the growth (a sawtooth of compactions, or a line).
  const tenths = Array.from({ length: 9 }, (_, i) => Math.floor((events * (i + 1)) / 10));
  const phase = progress.phase('soak', events, 'events');
  const worker = await runVariant(
    { ...spec, ends, events, staged: true, marks: [...new Set([...tenths, half - nudge, half, events - nudge, events])] },
    phase,
    options.timeoutMs,
    onMark,
  ).catch(async (error: unknown) => {
    await steps;
    throw failed ?? error;
  });
  await steps;
  if (failed) throw failed;
  marks.sort((a, b) => a.mark - b.mark);
  const [atHalf, atEnd] = [checkpoints.find((c) => c.mark === half)?.settled, checkpoints.find((c) => c.mark === events)?.settled];
  if (!atHalf || !atEnd) throw new Error(`bench:kafka soak: the worker ended without passing both marks (${half} and ${events} events committed)`);
  phase.finish(`state directory ${atHalf.stateDirMb} -> ${atEnd.stateDirMb} MiB, changelogs ${atHalf.changelogMb} -> ${atEnd.changelogMb} MiB`);
  return {
    figures: {
      stateDirMbAt1M: atHalf.stateDirMb,
      stateDirMbAt2M: atEnd.stateDirMb,
      changelogMbAt1M: atHalf.changelogMb,
      changelogMbAt2M: atEnd.changelogMb,
    },
    details: { events, changelogConfig: spec.changelogConfig ?? {}, nudgeEvents: nudge, checkpoints, marks, worker },
  };
}

/** Waits until the broker's cleaner has caught up on the group's changelogs ({@link cleanerCaughtUp}), at most `timeoutMs`; false if it had not. */
async function cleanerSettles(dataDir: string, group: string, minCleanableRatio: number, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (cleanerCaughtUp(await changelogPartitions(dataDir, group), minCleanableRatio)) return true;
    if (performance.now() >= deadline) return false;
    await sleep(Math.min(2_000, Math.max(0, deadline - performance.now())));
  }
}

/** The disk use of the changelog topics of a consumer group (`<group>-<store>-changelog-<partition>` folders). */
async function changelogDiskUse(dataDir: string, group: string): Promise<{ blocks: number; logBytes: number }> {
  const pattern = /-changelog-\d+$/;
  let blocks = 0;
  let logBytes = 0;
  for (const entry of await readdir(dataDir, { withFileTypes: true })) {
    if (!entry.isDirectory() || !entry.name.startsWith(`${group}-`) || !pattern.test(entry.name)) continue;
    const use = await diskUse(join(dataDir, entry.name), (name) => name.endsWith('.log'));
    blocks += use.blocks;
    logBytes += use.matchedBytes;
  }
  return { blocks, logBytes };
}

/**
 * Bytes on disk under a folder as `du` counts them (allocated blocks: Kafka preallocates its index
 * files sparse), and the apparent size of the files `matches` picks. A file gone while it is
 * walked (compaction swaps segments) is skipped.
 */
async function diskUse(dir: string, matches: (name: string) => boolean): Promise<{ blocks: number; matchedBytes: number }> {
  let blocks = 0;
  let matchedBytes = 0;
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return { blocks, matchedBytes };
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const inner = await diskUse(path, matches);
      blocks += inner.blocks;
      matchedBytes += inner.matchedBytes;
      continue;
    }
    try {
      const s = await stat(path);
      blocks += s.blocks * 512;
      if (matches(entry.name)) matchedBytes += s.size;
    } catch {
      // Deleted meanwhile (a cleaned segment).
    }
  }
  return { blocks, matchedBytes };
}

const mib = (bytes: number): number => Math.round((bytes / 2 ** 20) * 10) / 10;

/** The soak's goals: the second half adds at most 10 % to the state directory and to the changelogs. */
export function soakGoals(f: SoakFigures): Record<string, Goal & { ratio: number }> {
  const stateDir = Math.round((f.stateDirMbAt2M / Math.max(f.stateDirMbAt1M, 0.1)) * 100) / 100;
  const changelog = Math.round((f.changelogMbAt2M / Math.max(f.changelogMbAt1M, 0.1)) * 100) / 100;
  return {
    soakStateDir: { goal: 'stateDirMbAt2M <= 1.1 x stateDirMbAt1M', ratio: stateDir, met: stateDir <= 1.1 },
    soakChangelog: { goal: 'changelogMbAt2M <= 1.1 x changelogMbAt1M', ratio: changelog, met: changelog <= 1.1 },
  };
}
