/**
 * orderly on a real Kafka broker against the consumers people write by hand (issue 3 §9):
 * `npm run -s bench:kafka` prints a table, `npm run -s bench:kafka -- --json` one JSON object.
 * Progress goes to stderr. Starts (and stops) its own broker unless given `--bootstrap`.
 * See docs/benchmarks.md, "On Kafka".
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { describeMachine } from '../machine.js';
import { progressOnStderr, type Progress } from '../progress.js';
import { benchBroker } from './broker.js';
import { killVariants, runVariant, type MeasuredVariant } from './child.js';
import { totalOf, type EndOffsets } from './events.js';
import { deleteTopics, prefill } from './prefill.js';
import { measureRestore } from './restore.js';
import { formatKafkaTable, kafkaGoals, type KafkaBenchReport, type KafkaBenchSettings } from './report.js';
import { runSoak, soakGoals } from './soak.js';
import type { VariantSpec } from './spec.js';

const usage = `npm run -s bench:kafka -- [--json] [--bootstrap HOST:PORT | --port P] [--events N] [--partitions N] [--keys N]
  [--serial-events N] [--slow-events N] [--slow-decide-ms MS] [--backlog N] [--backlog-decide-ms MS] [--backlog-hold-ms MS]
  [--max-in-flight N] [--max-buffered N] [--stored-format 2|4] [--commit-every-ms MS] [--consumer-config KEY=VALUE]... [--producer-config KEY=VALUE]...
  [--restore-keys N] [--restore-only]
  [--soak-events N] [--soak-only] [--no-soak] [--soak-changelog-config KEY=VALUE]... [--soak-nudge-events N] [--soak-settle-ms MS]
  [--broker-data-dir DIR]`;

/** The soak's changelog topics' settings over orderly's, unless --soak-changelog-config is given (docs/benchmarks.md, "The soak"). */
const SOAK_CHANGELOG_CONFIG = ['delete.retention.ms=60000'];

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      json: { type: 'boolean', default: false },
      bootstrap: { type: 'string' },
      port: { type: 'string', default: process.env.ORDERLY_BENCH_KAFKA_PORT ?? '19192' },
      events: { type: 'string', default: '200000' },
      partitions: { type: 'string', default: '12' },
      keys: { type: 'string', default: '10000' },
      'serial-events': { type: 'string', default: '20000' },
      'slow-events': { type: 'string', default: '20000' },
      'slow-decide-ms': { type: 'string', default: '5' },
      backlog: { type: 'string', default: '1000000' },
      'backlog-decide-ms': { type: 'string', default: '200' },
      'backlog-hold-ms': { type: 'string', default: '20000' },
      'max-in-flight': { type: 'string', default: '32' },
      'commit-every-ms': { type: 'string', default: '250' },
      'max-buffered': { type: 'string' },
      'stored-format': { type: 'string' },
      'restore-keys': { type: 'string', default: '10000' },
      'restore-only': { type: 'boolean', default: false },
      'consumer-config': { type: 'string', multiple: true, default: [] },
      'producer-config': { type: 'string', multiple: true, default: [] },
      'soak-events': { type: 'string', default: '2000000' },
      'soak-only': { type: 'boolean', default: false },
      'no-soak': { type: 'boolean', default: false },
      'soak-changelog-config': { type: 'string', multiple: true },
      'soak-nudge-events': { type: 'string', default: '1200' },
      'soak-settle-ms': { type: 'string', default: '300000' },
      'broker-data-dir': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  const int = (name: keyof typeof values, min: number): number => {
    const raw = values[name];
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`bench:kafka: --${name} must be a whole number >= ${min}, got '${raw}'\n${usage}`);
    return n;
  };
  const events = int('events', 1);
  const pairs = (name: 'consumer-config' | 'producer-config' | 'soak-changelog-config', given = values[name]!): Record<string, string> =>
    Object.fromEntries(
      given.map((pair) => {
        const at = pair.indexOf('=');
        if (at <= 0) throw new Error(`bench:kafka: --${name} takes KEY=VALUE, got '${pair}'`);
        return [pair.slice(0, at), pair.slice(at + 1)];
      }),
    );
  return {
    json: values.json!,
    help: values.help!,
    restoreOnly: values['restore-only']!,
    bootstrap: values.bootstrap,
    port: int('port', 1),
    soak: {
      events: values['no-soak'] ? 0 : int('soak-events', 40),
      nudgeEvents: int('soak-nudge-events', 1),
      settleTimeoutMs: int('soak-settle-ms', 0),
      only: values['soak-only']!,
      changelogConfig: pairs('soak-changelog-config', values['soak-changelog-config'] ?? SOAK_CHANGELOG_CONFIG),
      brokerDataDir: values['broker-data-dir'],
    },
    settings: {
      events,
      partitions: int('partitions', 1),
      keys: int('keys', 1),
      serialEvents: Math.min(events, int('serial-events', 1)),
      slowEvents: int('slow-events', 1),
      slowDecideMs: int('slow-decide-ms', 1),
      backlogEvents: int('backlog', 1),
      backlogDecideMs: int('backlog-decide-ms', 1),
      backlogHoldMs: int('backlog-hold-ms', 1),
      maxInFlight: int('max-in-flight', 1),
      commitEveryMs: int('commit-every-ms', 1),
      restoreKeysPerPartition: int('restore-keys', 1),
      ...(values['max-buffered'] === undefined ? {} : { maxBuffered: int('max-buffered', 1) }),
      ...(values['stored-format'] === undefined ? {} : { storedFormat: storedFormatOf(values['stored-format']) }),
      consumerConfig: pairs('consumer-config'),
      producerConfig: pairs('producer-config'),
    },
  };
}

async function main(argv: string[]): Promise<void> {
  const options = parse(argv);
  if (options.help) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  const s = options.settings;
  const started = performance.now();
  const machine = describeMachine();
  const progress = progressOnStderr();
  const broker = await benchBroker({ bootstrap: options.bootstrap, port: options.port });
  // Interrupted: the broker runs detached, so stop it here rather than leave it running.
  const interrupt = (signal: NodeJS.Signals) => {
    process.stderr.write(`bench:kafka: ${signal}: stopping the variants${broker.started ? ' and the broker' : ''}\n`);
    killVariants();
    void broker.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const run = `orderly-bench-${Date.now()}`;
  const topics = { events: `${run}.events`, slow: `${run}.slow`, backlog: `${run}.backlog`, restore: `${run}.restore`, soak: `${run}.soak` };
  const stateRoot = await mkdtemp(join(tmpdir(), 'orderly-bench-kafka-'));
  const soak = async () => {
    if (options.soak.events === 0) return undefined;
    const brokerDataDir = options.soak.brokerDataDir ?? broker.dataDir;
    if (!brokerDataDir)
      throw new Error("bench:kafka: the soak measures the changelogs on the broker's disk: give --broker-data-dir with --bootstrap (or --no-soak)");
    return runSoak({
      events: options.soak.events,
      partitions: s.partitions,
      keys: s.keys,
      nudgeEvents: options.soak.nudgeEvents,
      settleTimeoutMs: options.soak.settleTimeoutMs,
      progress,
      spec: {
        kind: 'orderly',
        bootstrap: broker.bootstrap,
        topic: topics.soak,
        group: `${run}.soak`,
        stateDir: join(stateRoot, 'soak'),
        decideMs: 0,
        maxInFlight: s.maxInFlight,
        commitEveryMs: s.commitEveryMs,
        changelogConfig: options.soak.changelogConfig,
        perKeyState: true,
      },
      brokerDataDir,
      timeoutMs: 90 * 60_000,
    });
  };
  if (options.soak.only) {
    try {
      const result = (await soak())!;
      const report = {
        date: new Date().toISOString(),
        machine,
        settings: { partitions: s.partitions, keys: s.keys, maxInFlight: s.maxInFlight, commitEveryMs: s.commitEveryMs, broker: broker.description },
        ...result.figures,
        goals: soakGoals(result.figures),
        details: { soak: result.details, totalSeconds: Math.round((performance.now() - started) / 1_000) },
      };
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    } finally {
      await rm(stateRoot, { recursive: true, force: true });
      process.off('SIGINT', interrupt);
      process.off('SIGTERM', interrupt);
      if (broker.started) await broker.stop();
      else await deleteTopics(broker.bootstrap, [topics.soak]).catch(() => undefined);
    }
    return;
  }
  try {
    // A worker restarting on an empty state directory for 12 partitions (issue 15 §5).
    const restore = () =>
      measureRestore(
        {
          bootstrap: broker.bootstrap,
          topic: topics.restore,
          partitions: 12,
          keysPerPartition: s.restoreKeysPerPartition,
          maxInFlight: s.maxInFlight,
          commitEveryMs: s.commitEveryMs,
          stateRoot,
          ...(s.storedFormat ? { storedFormat: s.storedFormat } : {}),
        },
        progress,
      );
    if (options.restoreOnly) {
      const restored = await restore();
      const report = { date: new Date().toISOString(), machine, restoreMsFor12Partitions: restored.restoreMs, restore: restored };
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    const prefillSeconds: Record<string, number> = {};
    const fill = async (name: keyof typeof topics, count: number): Promise<EndOffsets> => {
      const t0 = performance.now();
      const ends = await prefill(broker.bootstrap, { topic: topics[name], events: count, partitions: s.partitions, keys: s.keys }, progress);
      prefillSeconds[name] = Math.round((performance.now() - t0) / 100) / 10;
      return ends;
    };
    const ends = await fill('events', s.events);
    const slowEnds = await fill('slow', Math.min(s.slowEvents, s.events));
    const backlogEnds = await fill('backlog', s.backlogEvents);

    const variant = (name: string, spec: Omit<VariantSpec, 'bootstrap' | 'group' | 'stateDir' | 'maxInFlight' | 'commitEveryMs'>) =>
      measure(progress, name, {
        ...spec,
        bootstrap: broker.bootstrap,
        group: `${run}.${name}`,
        stateDir: join(stateRoot, name),
        maxInFlight: s.maxInFlight,
        commitEveryMs: s.commitEveryMs,
        ...(spec.kind === 'orderly' && s.maxBuffered ? { maxBuffered: s.maxBuffered } : {}),
        ...(spec.kind === 'orderly' && s.storedFormat ? { storedFormat: s.storedFormat } : {}),
        ...(spec.kind === 'orderly' && Object.keys(s.consumerConfig).length > 0 ? { consumerConfig: s.consumerConfig } : {}),
        ...(spec.kind === 'orderly' && Object.keys(s.producerConfig).length > 0 ? { producerConfig: s.producerConfig } : {}),
      });
    const all = totalOf(ends);
    const raw = await variant('raw', { kind: 'raw', topic: topics.events, ends, events: all, decideMs: 0 });
    const serial = await variant('serial', { kind: 'serial', topic: topics.events, ends, events: s.serialEvents, decideMs: 0 });
    const orderly = await variant('orderly', { kind: 'orderly', topic: topics.events, ends, events: all, decideMs: 0 });
    const slowAll = totalOf(slowEnds);
    const serialSlow = await variant('serial-slow', { kind: 'serial', topic: topics.slow, ends: slowEnds, events: slowAll, decideMs: s.slowDecideMs });
    const orderlySlow = await variant('orderly-slow', { kind: 'orderly', topic: topics.slow, ends: slowEnds, events: slowAll, decideMs: s.slowDecideMs });
    const backlog = await variant('backlog', {
      kind: 'orderly',
      topic: topics.backlog,
      ends: backlogEnds,
      events: totalOf(backlogEnds),
      decideMs: s.backlogDecideMs,
      holdMs: s.backlogHoldMs,
    });

    const restored = await restore();
    const soaked = await soak();

    const figures = {
      rawEventsPerSec: raw.eventsPerSec,
      serialEventsPerSec: serial.eventsPerSec,
      orderlyEventsPerSec: orderly.eventsPerSec,
      serialSlowEventsPerSec: serialSlow.eventsPerSec,
      orderlySlowEventsPerSec: orderlySlow.eventsPerSec,
      peakRssMb: Math.max(orderly.peakRssMb, orderlySlow.peakRssMb),
      backlogRssMb: backlog.peakRssMb,
      restoreMsFor12Partitions: restored.restoreMs,
    };
    const settings: KafkaBenchSettings = { ...s, broker: broker.description };
    const report: KafkaBenchReport = {
      date: new Date().toISOString(),
      machine,
      settings,
      ...figures,
      ...soaked?.figures,
      goals: { ...kafkaGoals(figures), ...(soaked ? soakGoals(soaked.figures) : {}) },
      details: {
        ...(soaked ? { soak: soaked.details } : {}),
        raw,
        serial,
        orderly,
        serialSlow,
        orderlySlow,
        backlog,
        restore: restored,
        prefillSeconds,
        totalSeconds: Math.round((performance.now() - started) / 1_000),
      },
    };
    process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatKafkaTable(report));
  } finally {
    await rm(stateRoot, { recursive: true, force: true });
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    if (broker.started) await broker.stop();
    else await deleteTopics(broker.bootstrap, Object.values(topics)).catch(() => undefined);
  }
}

/** Runs one variant in its child process under a progress phase. */
async function measure(progress: Progress, name: string, spec: VariantSpec): Promise<MeasuredVariant> {
  const phase = progress.phase(name, spec.events, 'events');
  const result = await runVariant(spec, phase, 20 * 60_000);
  const rate = spec.holdMs === undefined ? `${result.eventsPerSec} events/s` : `${result.events} finished in ${(result.wallMs / 1_000).toFixed(1)} s`;
  phase.finish(`${rate}, peak RSS ${result.peakRssMb} MiB`);
  return result;
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`bench:kafka: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});

/** The value of --stored-format: 2 or 4, as `runTopology`'s `storedFormat`. */
function storedFormatOf(value: string): 2 | 4 {
  if (value !== '2' && value !== '4') throw new Error(`bench:kafka: --stored-format is 2 or 4, got '${value}'`);
  return Number(value) as 2 | 4;
}
