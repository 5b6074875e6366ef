import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Phase } from '../progress.js';
import type { Goal } from '../report.js';
import { runVariant, type MeasuredVariant } from './child.js';
import { totalOf } from './events.js';
import type { VariantSpec } from './spec.js';

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

export interface SoakDetails {
  readonly events: number;
  /** The changelog topics' settings the worker created them with, over orderly's. */
  readonly changelogConfig: Readonly<Record<string, string>>;
  /** Each measure: what was committed, seconds since the worker's first record, and the sizes (MiB, disk use; changelog `.log` files alone too). */
  readonly marks: ReadonlyArray<{
    readonly mark: number;
    readonly atSeconds: number;
    readonly stateDirMb: number;
    readonly changelogMb: number;
    readonly changelogLogFilesMb: number;
  }>;
  readonly worker: MeasuredVariant;
}

export interface SoakOptions {
  readonly spec: Omit<VariantSpec, 'marks' | 'events'>;
  /** The broker's log directory (`log.dirs`), where the changelog topics' partitions are folders. */
  readonly brokerDataDir: string;
  readonly phase: Phase;
  readonly timeoutMs: number;
}

/** Runs the soak over a prefilled topic (its `ends`) and measures at half and at the end. */
export async function runSoak(options: SoakOptions): Promise<{ figures: SoakFigures; details: SoakDetails }> {
  const { spec, brokerDataDir } = options;
  const events = totalOf(spec.ends);
  const half = Math.floor(events / 2);
  const marks: Array<SoakDetails['marks'][number]> = [];
  const measuring: Array<Promise<void>> = [];
  const startedAt = performance.now();
  const onMark = (mark: number) => {
    const atSeconds = Math.round((performance.now() - startedAt) / 100) / 10;
    measuring.push(
      (async () => {
        const [stateDir, changelog] = await Promise.all([diskUse(spec.stateDir, () => true), changelogDiskUse(brokerDataDir, spec.group)]);
        marks.push({ mark, atSeconds, stateDirMb: mib(stateDir.blocks), changelogMb: mib(changelog.blocks), changelogLogFilesMb: mib(changelog.logBytes) });
      })(),
    );
  };
  // Every tenth too, to show the shape of the growth (a sawtooth of compactions, or a line).
  const tenths = Array.from({ length: 9 }, (_, i) => Math.floor((events * (i + 1)) / 10));
  const worker = await runVariant({ ...spec, events, marks: [...new Set([...tenths, half, events])] }, options.phase, options.timeoutMs, onMark);
  await Promise.all(measuring);
  marks.sort((a, b) => a.mark - b.mark);
  const [atHalf, atEnd] = [marks.find((m) => m.mark === half), marks.find((m) => m.mark === events)];
  if (!atHalf || !atEnd) throw new Error(`bench:kafka soak: the worker ended without passing both marks (${half} and ${events} events committed)`);
  return {
    figures: {
      stateDirMbAt1M: atHalf.stateDirMb,
      stateDirMbAt2M: atEnd.stateDirMb,
      changelogMbAt1M: atHalf.changelogMb,
      changelogMbAt2M: atEnd.changelogMb,
    },
    details: { events, changelogConfig: spec.changelogConfig ?? {}, marks, worker },
  };
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
