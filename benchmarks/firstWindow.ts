/**
 * What learning a budget costs when the agent step declares no limit: `npx tsx benchmarks/firstWindow.ts
 * [--json]`. A backlog of events against a fake provider (fixed 10-s windows from time 0), 4
 * partitions × maxInFlight 16; every figure is on the driver's virtual clock, so it is deterministic.
 */
import { effect, Outcome, stream, type Decided } from '../src/index.js';
import { TopologyTestDriver } from '../testkit/driver.js';
import { fakeModel, type ModelCall } from '../testkit/fakeModel.js';

const windowMs = 10_000;
const partitions = 4;
const maxInFlight = 16;

interface Case {
  readonly budget: number;
  readonly latencyMs: number;
  readonly events: number;
}

/** The figures of one run. */
export interface FirstWindowRun extends Case {
  /** Refusals in the window of the first 429 (the learning window). */
  readonly firstWindowRefused: number;
  /** Accepted calls in that window. */
  readonly firstWindowAccepted: number;
  /** Refusals in the window after it (where the length is learned, if the first 429 did not teach the whole budget). */
  readonly nextWindowRefused: number;
  /** Refusals in every window after those two, summed. */
  readonly laterRefused: number;
  /** The most refusals in any window after those two. */
  readonly maxLaterRefused: number;
  /** Virtual time at which the last event was applied. */
  readonly drainMs: number;
  /** What the budget alone allows: events ÷ budget × window (the last call's latency not counted). */
  readonly lowerBoundMs: number;
}

interface Ticket {
  readonly n: number;
}

export async function measureFirstWindow(c: Case): Promise<FirstWindowRun> {
  const model = fakeModel<Ticket, { ok: true }>({ latencyMs: c.latencyMs, limit: { calls: c.budget, windowMs }, decide: () => ({ ok: true }) });
  const topology = stream<Ticket>('tickets')
    .keyedSerial({ maxInFlight })
    .agentStep('decide', model.decide)
    .park({ attempts: 1 })
    .applyOnce(effect('done', ({ event }: Decided<Ticket, { ok: true }>, { state }) => state.put(String(event.n), true)))
    .build();
  const driver = new TopologyTestDriver(topology, { partitions });
  try {
    const input = driver.createInputTopic<Ticket>('tickets');
    for (let n = 0; n < c.events; n++) input.pipeInput(`key-${n}`, { n });
    await driver.runUntilIdle();
    const applied = driver.history().filter((h) => h.outcome === Outcome.APPLIED);
    if (applied.length !== c.events) throw new Error(`first window bench: ${applied.length} of ${c.events} events were applied`);
    return { ...c, ...perWindow(model.stats().calls), drainMs: Math.max(...applied.map((h) => h.atMs)), lowerBoundMs: (c.events / c.budget) * windowMs };
  } finally {
    await driver.close();
  }
}

function perWindow(calls: readonly ModelCall[]) {
  const windows: Array<{ accepted: number; refused: number }> = [];
  for (const call of calls) {
    const w = (windows[Math.floor(call.atMs / windowMs)] ??= { accepted: 0, refused: 0 });
    if (call.accepted) w.accepted += 1;
    else w.refused += 1;
  }
  const all = Array.from(windows, (w) => w ?? { accepted: 0, refused: 0 });
  const first = all.findIndex((w) => w.refused > 0);
  const later = first < 0 ? [] : all.slice(first + 2);
  return {
    firstWindowRefused: first < 0 ? 0 : all[first]!.refused,
    firstWindowAccepted: first < 0 ? 0 : all[first]!.accepted,
    nextWindowRefused: first < 0 ? 0 : (all[first + 1]?.refused ?? 0),
    laterRefused: later.reduce((s, w) => s + w.refused, 0),
    maxLaterRefused: Math.max(0, ...later.map((w) => w.refused)),
  };
}

async function main(argv: readonly string[]): Promise<void> {
  const runs: FirstWindowRun[] = [];
  for (const budget of [5, 20, 60, 200]) {
    for (const latencyMs of [1_000, 4_000]) runs.push(await measureFirstWindow({ budget, latencyMs, events: budget * 10 }));
  }
  if (argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify(runs, null, 2)}\n`);
    return;
  }
  const head = [
    'budget',
    'latencyMs',
    'events',
    'firstWindowRefused',
    'firstWindowAccepted',
    'nextWindowRefused',
    'laterRefused',
    'maxLaterRefused',
    'drainMs',
    'lowerBoundMs',
  ] as const;
  process.stdout.write(`| ${head.join(' | ')} |\n|${head.map(() => ' ---: ').join('|')}|\n`);
  for (const r of runs) process.stdout.write(`| ${head.map((h) => String(r[h])).join(' | ')} |\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`first window bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
