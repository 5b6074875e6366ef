// The package as a user gets it: `npm pack`, then `CKJS_LINKING=dynamic npm install --omit=dev`
// of the tarball in an empty folder outside the repository, then the CLI, the entry points and a
// small topology of the user's own, run on the testkit. The install builds the native Kafka client
// from source, so this file takes minutes; it needs the npm registry. It packs dist/ as built
// (scripts/test.sh builds first) without the prepack script, which would rebuild dist/ under the
// other test files' feet.
import { execFileSync, type ExecFileSyncOptions } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { workedExampleVariants } from '../../testkit/scenarios/workedExample.js';
import { root } from './moduleGraph.js';

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; devDependencies: Record<string, string> };
const folder = mkdtempSync(join(tmpdir(), 'orderly-pack-'));
const app = join(folder, 'app');

/** The environment without the npm_* variables of the npm that runs the tests (they would redirect the install). */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
  return { ...env, CKJS_LINKING: 'dynamic' };
}

function inApp(command: string, args: readonly string[], options: ExecFileSyncOptions = {}): string {
  return execFileSync(command, args, { cwd: app, env: cleanEnv(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...options }) as string;
}

/** Runs a module in the app and prints which native Kafka client files the process has loaded. */
const loadedNative = `
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
await import(process.argv[1]);
const cached = Object.keys(createRequire(import.meta.url).cache).filter((f) => f.includes('kafka-javascript'));
const mapped = existsSync('/proc/self/maps') ? readFileSync('/proc/self/maps', 'utf8').split('\\n').filter((l) => /kafka-javascript|librdkafka/.test(l)) : [];
console.log(JSON.stringify({ cached: cached.length, mapped: mapped.length }));
`;

beforeAll(() => {
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'loans', private: true, type: 'module' }));
  const tarball = execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', folder], { cwd: root, env: cleanEnv(), encoding: 'utf8' })
    .trim()
    .split('\n')
    .at(-1)!;
  inApp('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', join(folder, tarball)]);
}, 1_800_000);

afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('the packed package, installed with --omit=dev', () => {
  test('orderly --version prints the version', () => {
    expect(inApp('npx', ['--no-install', 'orderly', '--version']).trim()).toBe(pkg.version);
  });

  test('orderly run --help and orderly parked --help', () => {
    expect(inApp('npx', ['--no-install', 'orderly', 'run', '--help'])).toContain('--bootstrap <servers>');
    expect(inApp('npx', ['--no-install', 'orderly', 'parked', '--help'])).toContain('resolve');
  });

  test('orderly scenario worked-example --json prints one array, one object per variant', () => {
    const results = JSON.parse(inApp('npx', ['--no-install', 'orderly', 'scenario', 'worked-example', '--json'])) as Array<{
      variant: string;
      doubleEffects: number;
    }>;
    expect(results.map((r) => r.variant)).toEqual([...workedExampleVariants]);
    expect(results.every((r) => r.doubleEffects === 0)).toBe(true);
  });

  test('LICENSE, README and docs are in the package; each source map carries its source', () => {
    const installed = join(app, 'node_modules', 'orderly');
    expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toContain('Apache License');
    expect(readFileSync(join(installed, 'README.md'), 'utf8')).toContain('docs/guarantees.md');
    expect(readFileSync(join(installed, 'docs', 'guarantees.md'), 'utf8').length).toBeGreaterThan(0);
    const map = JSON.parse(readFileSync(join(installed, 'dist', 'src', 'index.js.map'), 'utf8')) as { sources: string[]; sourcesContent?: string[] };
    expect(map.sourcesContent?.length).toBe(map.sources.length);
  });

  test('importing orderly loads no native Kafka client; importing orderly/kafka does', () => {
    expect(JSON.parse(inApp('node', ['--input-type=module', '-e', loadedNative, 'orderly']))).toEqual({ cached: 0, mapped: 0 });
    const kafka = JSON.parse(inApp('node', ['--input-type=module', '-e', loadedNative, 'orderly/kafka'])) as { cached: number; mapped: number };
    expect(kafka.cached).toBeGreaterThan(0);
  });

  test('orderly describe takes a TypeScript module, loaded as orderly run loads it', () => {
    writeFileSync(join(app, 'loans.ts'), loanTopology);
    const described = inApp('npx', ['--no-install', 'orderly', 'describe', 'loans.ts']);
    expect(described).toContain('Source: loan-applications-source (topics: [loan-applications]');
    expect(described).toContain('Sink: loan-verdicts-sink (topic: loan-verdicts)');
  });

  test('orderly/testkit works once fast-check (its peer dependency) is installed: a loan topology on the test driver', () => {
    inApp('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', `fast-check@${pkg.devDependencies['fast-check']}`]);
    writeFileSync(join(app, 'loans.mjs'), loanCheck);
    const result = JSON.parse(inApp('node', ['loans.mjs'])) as { verdicts: string[]; doubleEffects: number; parked: number };
    // Mallory's first application never validates: parked after its attempts, her second held behind it.
    expect(result).toEqual({ verdicts: ['a1:approve', 'a2:refer', 'b1:approve'], doubleEffects: 0, parked: 1 });
  });
});

/** A user's topology in TypeScript, of a domain not in examples/: loan applications keyed by applicant. */
const loanTopology = `
import { stream, json, effect, type Decided } from 'orderly';

interface LoanApplication { applicationId: string; applicant: string; amount: number; income: number }
interface Verdict { outcome: 'approve' | 'refer'; reason: string }

const booked = effect('loan-verdicts', ({ event, decision }: Decided<LoanApplication, Verdict>, { state }) => {
  state.put(event.applicationId, decision);
  return { applicationId: event.applicationId, ...decision };
});

export default stream<LoanApplication>('loan-applications', { value: json<LoanApplication>() })
  .keyedSerial({ maxInFlight: 4 })
  .agentStep('underwrite', async (a): Promise<Verdict> => ({ outcome: a.amount <= a.income * 3 ? 'approve' : 'refer', reason: 'rules' }))
  .park({ attempts: 2 })
  .applyOnce(booked)
  .to('loan-verdicts')
  .build();
`;

/** The same kind of topology in JavaScript, run on the test driver with a crash and a restart. */
const loanCheck = `
import { stream, json, effect } from 'orderly';
import { TopologyTestDriver, fakeModel } from 'orderly/testkit';

const Verdict = { '~standard': { version: 1, vendor: 'loans', validate: (v) =>
  v && (v.outcome === 'approve' || v.outcome === 'refer') ? { value: v } : { issues: [{ message: 'not a verdict' }] } } };
const model = fakeModel({ latencyMs: 1_000, poison: (a) => a.applicant === 'mallory',
  decide: (a) => ({ outcome: a.amount <= a.income * 3 ? 'approve' : 'refer' }) });
const topology = stream('loan-applications', { value: json() })
  .keyedSerial({ maxInFlight: 4 })
  .agentStep('underwrite', model.decide, { schema: Verdict })
  .park({ attempts: 2, retryDelayMs: 500 })
  .applyOnce(effect('loan-verdicts', ({ event, decision }, { state }) => {
    state.put(event.applicationId, decision);
    return { applicationId: event.applicationId, outcome: decision.outcome };
  }))
  .to('loan-verdicts')
  .build();
const driver = new TopologyTestDriver(topology, { partitions: 2, seed: 7, commit: { everyMs: 5_000 } });
const input = driver.createInputTopic('loan-applications');
const output = driver.createOutputTopic('loan-verdicts');
for (const a of [
  { applicationId: 'a1', applicant: 'alice', amount: 10_000, income: 50_000 },
  { applicationId: 'a2', applicant: 'alice', amount: 900_000, income: 50_000 },
  { applicationId: 'm1', applicant: 'mallory', amount: 5_000, income: 1 },
  { applicationId: 'm2', applicant: 'mallory', amount: 6_000, income: 1 },
  { applicationId: 'b1', applicant: 'bob', amount: 1_000, income: 2_000 },
]) input.pipeInput(a.applicant, a);
driver.crash({ point: 'recorded-not-committed' });
await driver.runUntilIdle();
driver.restart({ after: 5_000 });
await driver.runUntilIdle();
const verdicts = output.readValuesToList().map((v) => v.applicationId + ':' + v.outcome).sort();
const metrics = driver.metrics();
console.log(JSON.stringify({ verdicts: [...new Set(verdicts)], doubleEffects: metrics.doubleEffects, parked: metrics.outcomes.PARKED }));
await driver.close();
`;
