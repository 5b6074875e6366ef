// The peers benchmark's output check on the suite's broker: a correct output passes (a redelivered
// record too), a reordered, short or misplaced one is refused; then the benchmark's own code runs
// its Node contenders end to end on a tiny input. No figure is judged: this is not a speed test.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { benchEvent } from '../../benchmarks/kafka/events.js';
import { checkOutput, expectedOrder, OutputRefused, type ExpectedOrder, type ReadRecord } from '../../benchmarks/peers/checkOutput.js';
import type { PeersReport } from '../../benchmarks/peers/report.js';
import { readTopic } from '../../benchmarks/peers/readTopic.js';
import { createTopic, produce, type InputRecord } from './kafkaClient.js';
import { REPO } from './worker.js';

const run = promisify(execFile);
const PARTITIONS = 4;

describe('bench:peers output check', () => {
  const bootstrap = () => inject('kafkaBootstrap');
  const prefix = `peers-check-${Date.now()}`;
  let input: ReadRecord[];
  let expected: ExpectedOrder;

  beforeAll(async () => {
    const topic = `${prefix}.input`;
    await createTopic(bootstrap(), topic, PARTITIONS);
    const events = Array.from({ length: 120 }, (_, i) => benchEvent(i, 12));
    await produce(
      bootstrap(),
      topic,
      events.map((e) => ({ key: e.account, value: JSON.stringify(e) })),
    );
    input = await readTopic(bootstrap(), topic);
    expected = expectedOrder(input);
  });

  /** The output a correct contender writes: one record per input record, in its partition, with the key's running count. */
  function correctOutput(): InputRecord[] {
    const counts = new Map<string, number>();
    return input.map((r) => {
      const count = (counts.get(r.key!) ?? 0) + 1;
      counts.set(r.key!, count);
      return { key: r.key, partition: r.partition, value: JSON.stringify({ id: (JSON.parse(r.value!) as { disputeId: string }).disputeId, count }) };
    });
  }

  async function check(name: string, records: readonly InputRecord[]) {
    const topic = `${prefix}.${name}`;
    await createTopic(bootstrap(), topic, PARTITIONS);
    await produce(bootstrap(), topic, records);
    return checkOutput(name, topic, expected, await readTopic(bootstrap(), topic));
  }

  /** Indexes of the output records of key `acct-00003`. */
  function recordsOfOneKey(records: readonly InputRecord[]): number[] {
    return records.flatMap((r, i) => (r.key === 'acct-00003' ? [i] : []));
  }

  it('passes a correct output, and counts a redelivered record as a duplicate', async () => {
    expect(input).toHaveLength(120);
    expect(await check('correct', correctOutput())).toEqual({ records: 120, keys: 12, duplicates: 0 });
    const records = correctOutput();
    const [, second] = recordsOfOneKey(records) as [number, number];
    records.splice(second + 1, 0, records[second]!);
    expect(await check('redelivered', records)).toEqual({ records: 121, keys: 12, duplicates: 1 });
  });

  it('refuses a reordered output', async () => {
    const records = correctOutput();
    const [a, b] = recordsOfOneKey(records) as [number, number];
    [records[a], records[b]] = [records[b]!, records[a]!];
    await expect(check('reordered', records)).rejects.toThrow(/reordered/);
  });

  it('refuses a short output', async () => {
    const records = correctOutput();
    records.splice(records.length - 1, 1);
    const error = await check('short', records).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutputRefused);
    expect((error as Error).message).toMatch(/1 of 120 events have no output record \(short\)/);
  });

  it('refuses records of one key in two partitions, and a count that went back', async () => {
    const moved = correctOutput();
    // The key's last record, so that the records before it are in order in their partition.
    const last = recordsOfOneKey(moved).at(-1)!;
    moved[last] = { ...moved[last]!, partition: (moved[last]!.partition! + 1) % PARTITIONS };
    await expect(check('moved', moved)).rejects.toThrow(/in partitions \d and \d: not keyed like the input/);
    const stale = correctOutput();
    const [, again] = recordsOfOneKey(stale) as [number, number];
    stale[again] = { ...stale[again]!, value: stale[again]!.value.toString().replace('"count":2', '"count":1') };
    await expect(check('stale', stale)).rejects.toThrow(/its state lost updates/);
  });
});

it('bench:peers runs its Node contenders end to end and checks their outputs', async () => {
  // No wait for a quiet machine: the suite's other lanes keep the load up.
  const args = ['--events', '600', '--keys', '30', '--partitions', '4', '--slow-events', '60', '--contenders', 'raw,orderly', '--settle-load', '0'];
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'benchmarks/peers/run.ts', '--json', '--bootstrap', inject('kafkaBootstrap'), ...args], {
    cwd: REPO,
    maxBuffer: 16 * 2 ** 20,
  });
  const report = JSON.parse(stdout) as PeersReport;
  expect(report.details.fast.orderly?.output).toEqual({ records: 600, keys: 30, duplicates: 0 });
  expect(report.details.slow.orderly?.output).toEqual({ records: 60, keys: 30, duplicates: 0 });
  expect(report.details.slow.raw).toBeUndefined();
  expect(report.settings.settleLoad).toBe(0);
  expect(report.details.fast.orderly?.settledMs).toBeLessThan(1_000);
  expect(report.details.fast.orderly?.startLoadAverage).toBeTypeOf('number');
  // Raw's CPU on 600 events can be below /proc's 10 ms tick: a number, not necessarily above 0.
  expect(report.rawCpuMicrosPerEvent).toBeTypeOf('number');
  for (const figure of [
    'rawEventsPerSec',
    'rawPeakRssMb',
    'orderlyEventsPerSec',
    'orderlyCpuMicrosPerEvent',
    'orderlyPeakRssMb',
    'orderlySlowEventsPerSec',
  ] as const) {
    expect(report[figure], figure).toBeGreaterThan(0);
  }
  expect(report.kafkaStreamsEventsPerSec).toBeUndefined();
});

it('bench:peers runs orderly as several processes in one group with --orderly-workers, and checks the output they wrote together', async () => {
  const args = [
    '--events',
    '600',
    '--keys',
    '30',
    '--partitions',
    '4',
    '--slow-events',
    '60',
    '--contenders',
    'orderly',
    '--orderly-workers',
    '2',
    '--settle-load',
    '0',
  ];
  const { stdout, stderr } = await run(
    process.execPath,
    ['--import', 'tsx', 'benchmarks/peers/run.ts', '--json', '--bootstrap', inject('kafkaBootstrap'), ...args],
    {
      cwd: REPO,
      maxBuffer: 16 * 2 ** 20,
    },
  );
  const report = JSON.parse(stdout) as PeersReport;
  expect(report.settings.orderlyWorkers).toBe(2);
  expect(stderr).toMatch(/orderly: 2 processes: \d+ events\/s/);
  // A rebalance between the two may send some outputs again (at-least-once): every event is there, in order per key.
  expect(report.details.fast.orderly?.output).toMatchObject({ keys: 30 });
  expect(report.details.fast.orderly!.output!.records).toBeGreaterThanOrEqual(600);
  expect(report.details.slow.orderly!.output!.records).toBeGreaterThanOrEqual(60);
  expect(report.orderlyCpuMicrosPerEvent).toBeGreaterThan(0);
});
