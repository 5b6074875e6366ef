// The CLI from the checkout (./bin/orderly, compiled): --version, and the module loader of
// `orderly run` and `orderly parked --topology` (tsx, registered only for .ts), in a process of its own.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect, test } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');

function orderly(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [join(root, 'bin/orderly'), ...args], { cwd: root, encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

test('orderly --version prints the version of package.json', () => {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  expect(orderly('--version')).toMatchObject({ status: 0, stdout: `${version}\n` });
});

/** Loads MODULE with the compiled loadTopology in a fresh process; prints the topology's description. */
function loadTopology(module: string): { status: number | null; stdout: string; stderr: string } {
  const loader = pathToFileURL(join(root, 'dist/src/cli/loadTopology.js')).href;
  const script = `const { loadTopology } = await import(${JSON.stringify(loader)});
try { process.stdout.write((await loadTopology(process.argv[1])).describe()); }
catch (error) { process.stderr.write(error.message); process.exitCode = 1; }`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script, module], { cwd: root, encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

test('a .ts module is loaded through tsx, registered only for TypeScript', () => {
  const loaded = loadTopology('examples/disputes/topology.ts');
  expect(loaded.status, loaded.stderr).toBe(0);
  expect(loaded.stdout).toContain('Source: disputes-source (topics: [disputes], dead letters: disputes.dlq)');
});

test('a .ts module that Node.js loads as CommonJS (no "type": "module" above it) loads too', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orderly-cli-'));
  try {
    const dsl = pathToFileURL(join(root, 'dist/src/index.js')).href;
    writeFileSync(
      join(dir, 'loans.ts'),
      `import { stream } from '${dsl}';\nconst topic: string = 'loan-applications';\nexport default stream(topic).to('loan-verdicts').build();\n`,
    );
    const loaded = loadTopology(join(dir, 'loans.ts'));
    expect(loaded.status, loaded.stderr).toBe(0);
    expect(loaded.stdout).toContain('Source: loan-applications-source (topics: [loan-applications]');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a module that does not exist is refused, naming it, where it was looked for and the fix', () => {
  const loaded = loadTopology('no/such/topology.ts');
  expect(loaded.status).toBe(1);
  expect(loaded.stderr).toContain(`the module 'no/such/topology.ts' does not exist (${join(root, 'no/such/topology.ts')}): give the path of the module`);
});

test('a module that exports no topology is refused, naming the module and what it must export', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orderly-cli-'));
  try {
    writeFileSync(join(dir, 'notATopology.ts'), 'const n: number = 1;\nexport default n;\n');
    const loaded = loadTopology(join(dir, 'notATopology.ts'));
    expect(loaded.status).toBe(1);
    expect(loaded.stderr).toContain(`'${join(dir, 'notATopology.ts')}' must export a Topology by default`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a module that exports its topology by name only is refused, naming that export and the fix', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orderly-cli-'));
  try {
    const dsl = pathToFileURL(join(root, 'dist/src/index.js')).href;
    writeFileSync(join(dir, 'named.mts'), `import { stream } from '${dsl}';\nexport const renewals = stream('renewals').to('dunning').build();\n`);
    const loaded = loadTopology(join(dir, 'named.mts'));
    expect(loaded.status).toBe(1);
    expect(loaded.stderr).toContain(
      "must export a Topology by default (export default stream(...)...build()), or a function that returns one; it exports 'renewals' by name: export the one to run as default (export default renewals)",
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a module whose chain the DSL refuses, at its import or in the function it exports, is named with the DSL error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orderly-cli-'));
  try {
    const dsl = pathToFileURL(join(root, 'dist/src/index.js')).href;
    const chain = "stream('returns').keyedSerial().agentStep('inspect', async () => ({ ok: true })).to('refunds').build()";
    writeFileSync(join(dir, 'atImport.mts'), `import { stream } from '${dsl}';\nexport default ${chain};\n`);
    writeFileSync(join(dir, 'inFunction.mts'), `import { stream } from '${dsl}';\nexport default () => ${chain};\n`);
    for (const file of ['atImport.mts', 'inFunction.mts']) {
      const loaded = loadTopology(join(dir, file));
      expect(loaded.status).toBe(1);
      expect(loaded.stderr).toContain(`'${join(dir, file)}' builds a topology the DSL refuses: agentStep 'inspect' has no park() right after it`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every command refuses a bad number the same way, naming the option and the value', () => {
  const lab = orderly('lab', '--port', '70000');
  expect(lab.status).not.toBe(0);
  expect(lab.stderr).toContain("option '--port <n>' argument '70000' is invalid. expected a port from 0 to 65535, got '70000'");
  const run = orderly('run', 'x.js', '--bootstrap', '127.0.0.1:9', '--group', 'g', '--state-dir', 'd', '--metrics-port', '-1');
  expect(run.stderr).toContain("expected a port from 0 to 65535, got '-1'");
  const parked = orderly('parked', 'list', '--bootstrap', '127.0.0.1:9', '--group', 'g', '--topology', 'x.js', '--timeout-ms', '0');
  expect(parked.stderr).toContain("expected a whole number of at least 1, got '0'");
});

test('orderly run writes stored format 2 or 4, and refuses 3 (read, no longer written) naming 4', () => {
  const args = ['run', 'x.js', '--bootstrap', '127.0.0.1:9', '--group', 'g', '--state-dir', 'd', '--stored-format'];
  const three = orderly(...args, '3');
  expect(three.status).not.toBe(0);
  expect(three.stderr).toContain('stored format 3 (effect records carried in a changelog header) is read but no longer written: use 4');
  expect(orderly(...args, '5').stderr).toContain("a stored format this orderly writes is 2 or 4, got '5'");
});

test('orderly run refuses a log level pino does not have, from the flag or from ORDERLY_LOG_LEVEL, naming the levels', () => {
  const args = ['run', 'x.js', '--bootstrap', '127.0.0.1:9', '--group', 'g', '--state-dir', 'd'];
  const flag = orderly(...args, '--log-level', 'loud');
  expect(flag.status).not.toBe(0);
  expect(flag.stderr).toContain(
    "option '--log-level <level>' argument 'loud' is invalid. expected one of fatal, error, warn, info, debug, trace, silent, got 'loud'",
  );
  const run = spawnSync(process.execPath, [join(root, 'bin/orderly'), ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, ORDERLY_LOG_LEVEL: 'verbose' },
  });
  expect(run.status).not.toBe(0);
  expect(run.stderr).toContain("orderly run: ORDERLY_LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent, got 'verbose'");
  expect(run.stderr).not.toContain('at ');
});

test("a module that does not exist is told under the command's own name", () => {
  const parked = orderly('parked', 'list', '--bootstrap', '127.0.0.1:9', '--group', 'g', '--topology', 'nosuch.ts');
  expect(parked.status).not.toBe(0);
  expect(parked.stderr).toMatch(/^orderly parked: the module 'nosuch\.ts' does not exist \(/);
  const run = orderly('run', 'nosuch.ts', '--bootstrap', '127.0.0.1:9', '--group', 'g', '--state-dir', 'd');
  expect(run.stderr).toMatch(/^orderly run: the module 'nosuch\.ts' does not exist \(/);
});

test('an error ends with its own line and a hint, not the whole help', () => {
  const run = orderly('scenario', 'no-such-scenario');
  expect(run.status).toBe(1);
  expect(run.stderr).toBe(
    "orderly scenario: no scenario named 'no-such-scenario'; the scenarios are: worked-example, migration\n(run 'orderly help <command>' for its options)\n",
  );
});

test('orderly scenario worked-example prints its table and nothing on stderr (no warning of Node.js either)', () => {
  const run = orderly('scenario', 'worked-example');
  expect(run.status, run.stderr).toBe(0);
  expect(run.stdout).toContain('retry-after');
  expect(run.stderr).toBe('');
});

test('orderly scenario --state-dir refuses a directory an earlier run left its state in, naming it, the cause and the fix', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orderly-scenario-dir-'));
  try {
    const stateDir = join(dir, 'state');
    const first = orderly('scenario', 'worked-example', '--state-dir', stateDir, '--json');
    expect(first.status, first.stderr).toBe(0);
    expect((JSON.parse(first.stdout) as Array<{ modelCalls: number }>).every((v) => v.modelCalls > 0)).toBe(true);

    // Run again on it, it would take every event for a duplicate (modelCalls 0): refused.
    const again = orderly('scenario', 'worked-example', '--state-dir', stateDir, '--json');
    expect(again.status).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toContain(`orderly scenario worked-example: --state-dir '${stateDir}' is not empty (it holds 'crash-commit-each'`);
    expect(again.stderr).toContain(
      "): each run's log is in memory and starts at offset 0 again, so the effect records an earlier run stored there would mark every event a duplicate (modelCalls 0); " +
        'give an empty or new directory, or omit --state-dir for a temporary one',
    );
    // An empty directory is taken.
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    expect(orderly('scenario', 'migration', '--state-dir', empty, '--json').status).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
