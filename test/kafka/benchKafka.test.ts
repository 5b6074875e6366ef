// The Kafka benchmark's code on a tiny input against the suite's broker: every variant runs to its
// end point and the report has its figures. No figure is judged: this is not a speed test.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, inject, it } from 'vitest';
import type { KafkaBenchReport } from '../../benchmarks/kafka/report.js';
import { REPO } from './worker.js';

const run = promisify(execFile);

it('bench:kafka runs every variant to its end point and reports each figure', async () => {
  const args = [
    '--events',
    '600',
    '--serial-events',
    '60',
    '--slow-events',
    '120',
    '--backlog',
    '3000',
    '--backlog-hold-ms',
    '300',
    '--keys',
    '50',
    '--restore-keys',
    '20',
  ];
  // The soak on 400 events, measuring the changelogs in the suite's broker's log directory; its
  // pauses wait for segments of 200 ms to age, and for the cleaner at most half a second (it may not
  // catch up: the measure is taken all the same).
  args.push('--soak-events', '400', '--broker-data-dir', join(inject('kafkaDir'), 'node-1', 'data'));
  args.push('--soak-changelog-config', 'segment.ms=200', '--soak-settle-ms', '500');
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'benchmarks/kafka/run.ts', '--json', '--bootstrap', inject('kafkaBootstrap'), ...args], {
    cwd: REPO,
    maxBuffer: 16 * 2 ** 20,
  });
  const report = JSON.parse(stdout) as KafkaBenchReport;
  const { details: d } = report;
  expect([d.raw.events, d.serial.events, d.orderly.events, d.serialSlow.events, d.orderlySlow.events]).toEqual([600, 60, 600, 120, 120]);
  for (const figure of ['rawEventsPerSec', 'serialEventsPerSec', 'orderlyEventsPerSec', 'serialSlowEventsPerSec', 'orderlySlowEventsPerSec'] as const) {
    expect(report[figure], figure).toBeGreaterThan(0);
  }
  // The backlog run stops 300 ms after its first record: with a 200 ms decide it cannot have finished 3,000 events.
  expect(d.backlog.received).toBeGreaterThan(0);
  expect(d.backlog.events).toBeLessThan(3_000);
  expect(report.backlogRssMb).toBe(d.backlog.peakRssMb);
  expect(report.peakRssMb).toBe(Math.max(d.orderly.peakRssMb, d.orderlySlow.peakRssMb));
  expect(report.backlogRssMb).toBeGreaterThan(0);
  // The restart restores 12 partitions of 20 events' state each, and runs one new event on each.
  expect(d.restore.partitions.map((p) => p.partition)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  expect(d.restore.records).toBeGreaterThanOrEqual(12 * 20);
  expect(report.restoreMsFor12Partitions).toBe(Math.max(...d.restore.partitions.map((p) => p.firstEventMs)));
  expect(d.restore.cpuMs).toBeGreaterThan(0);
  expect(d.restore.cpuMicrosPerRecord).toBe(Math.round((d.restore.cpuMs * 1_000) / d.restore.records));
  expect(Object.keys(report.goals).sort()).toEqual([
    'backlogRssMb',
    'orderlyVsRaw',
    'restoreMsFor12Partitions',
    'slowOrderlyVsSerial',
    'soakChangelog',
    'soakStateDir',
  ]);
  // The soak measured at every tenth and at its pauses (20 events, a twentieth, before half and the end).
  const soak = d.soak!;
  expect(soak.worker.events).toBe(400);
  expect(soak.nudgeEvents).toBe(20);
  expect(soak.marks.map((m) => m.mark)).toEqual([40, 80, 120, 160, 180, 200, 240, 280, 320, 360, 380, 400]);
  for (const figure of ['stateDirMbAt1M', 'stateDirMbAt2M', 'changelogMbAt1M', 'changelogMbAt2M'] as const) expect(report[figure], figure).toBeGreaterThan(0);
  // Its two figures come from the settled measures, and the census read what the changelogs hold:
  // the per-account rows, which carry their events' effect records (stored format 4, the default),
  // and ring records of their own only from rows that filled up (written over, never tombstoned).
  expect(soak.checkpoints.map((c) => c.mark)).toEqual([200, 400]);
  expect(report.changelogMbAt2M).toBe(soak.checkpoints[1]!.settled.changelogMb);
  for (const { atPause } of soak.checkpoints) {
    expect(atPause.census.kinds.ring?.tombstones ?? 0).toBe(0);
    expect(atPause.census.kinds.table!.records).toBeGreaterThan(0);
    expect(atPause.census.kinds.table!.carried).toBeGreaterThan(0);
  }
});
