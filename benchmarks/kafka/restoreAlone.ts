/**
 * The restore alone, without a worker around it: the partitions of changelogs already on a broker
 * (those a `bench:kafka -- --bootstrap ...` run leaves behind, `<run>.restore.group-<store>-changelog`)
 * restored side by side into an empty LevelDB by `ChangelogStore.openPartition`, as a restarting
 * worker does before its engine reads them. Prints one JSON line: wall ms, records, the process's
 * CPU (every thread) and per record, and the broker's CPU when its pid is given.
 *
 *     npx tsx benchmarks/kafka/restoreAlone.ts --bootstrap HOST:PORT --group G --topic T
 *       [--partitions 12] [--state-dir D] [--broker-pid PID] STORE:KIND...
 *
 * `--topic` is the source topic (state keys name it), `STORE:KIND` each store of the topology
 * (the benchmark's: dispute-decisions:effects decide-park:park decide-runs:runs decide-attempts:attempts).
 */
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import type { StoreKind } from '../../src/graph/stores.js';
import { ChangelogStore, type RestoreReport } from '../../src/kafka/changelog/changelogStore.js';
import { openState } from '../../src/kafka/changelog/workerState.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    bootstrap: { type: 'string' },
    group: { type: 'string' },
    topic: { type: 'string' },
    partitions: { type: 'string', default: '12' },
    'state-dir': { type: 'string', default: join(tmpdir(), 'orderly-restore-alone') },
    'broker-pid': { type: 'string' },
  },
});
if (!values.bootstrap || !values.group || !values.topic || positionals.length === 0) {
  throw new Error('restoreAlone: give --bootstrap, --group, --topic and the stores as STORE:KIND (see the comment at the top of this file)');
}
const stores = positionals.map((arg) => {
  const [name, kind] = arg.split(':');
  return { name: name!, kind: kind as StoreKind };
});
/** A process's user + system CPU in ms, from /proc. */
const cpuOf = (pid: string): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

const dir = values['state-dir']!;
rmSync(dir, { recursive: true, force: true });
const logger = pino({ level: 'warn' });
const state = await openState(dir, { bootstrap: values.bootstrap, group: values.group }, logger);
const reports: RestoreReport[] = [];
const store = new ChangelogStore({
  local: state.local,
  group: values.group,
  stores,
  produce: async () => undefined,
  source: state.source,
  logger,
  onRestored: (report) => reports.push(report),
});
const brokerPid = values['broker-pid'];
const brokerAtStart = brokerPid ? cpuOf(brokerPid) : 0;
const startedAt = performance.now();
const cpuAtStart = process.cpuUsage();
await Promise.all(Array.from({ length: Number(values.partitions) }, (_, partition) => store.openPartition({ topic: values.topic!, partition })));
const cpu = process.cpuUsage(cpuAtStart);
const wallMs = Math.round(performance.now() - startedAt);
const records = reports.reduce((n, report) => n + report.records, 0);
const cpuMs = (cpu.user + cpu.system) / 1_000;
process.stdout.write(
  `${JSON.stringify({
    wallMs,
    records,
    cpuMs: Math.round(cpuMs),
    cpuMicrosPerRecord: Math.round((cpuMs * 10_000) / records) / 10,
    ...(brokerPid ? { brokerCpuMs: cpuOf(brokerPid) - brokerAtStart } : {}),
    loadAverage: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number),
  })}\n`,
);
await store.close();
rmSync(dir, { recursive: true, force: true });
