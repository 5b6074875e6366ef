// The CLI from the checkout (./bin/orderly, compiled): --version, and `describe` of a TypeScript
// module, which loads it the way `orderly run` does (tsx, registered only for .ts).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

test('orderly describe takes a .ts module and prints its graph, or a Mermaid flowchart', () => {
  const text = orderly('describe', 'examples/disputes/topology.ts');
  expect(text.status, text.stderr).toBe(0);
  expect(text.stdout).toContain('Source: disputes-source (topics: [disputes], dead letters: disputes.dlq)');
  expect(orderly('describe', 'dist/examples/disputes/topology.js', '--mermaid').stdout).toMatch(/^flowchart LR\n/);
});

test('orderly describe takes a .ts module that Node.js loads as CommonJS (no "type": "module" above it)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orderly-cli-'));
  try {
    const dsl = pathToFileURL(join(root, 'dist/src/index.js')).href;
    writeFileSync(join(dir, 'loans.ts'), `import { stream } from '${dsl}';\nconst topic: string = 'loan-applications';\nexport default stream(topic).to('loan-verdicts').build();\n`);
    const result = orderly('describe', join(dir, 'loans.ts'));
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('Source: loan-applications-source (topics: [loan-applications]');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('orderly describe of a module that exports no topology names the module and what it must export', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orderly-cli-'));
  try {
    writeFileSync(join(dir, 'notATopology.ts'), 'const n: number = 1;\nexport default n;\n');
    const result = orderly('describe', join(dir, 'notATopology.ts'));
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`orderly describe: '${join(dir, 'notATopology.ts')}' must export a Topology by default`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
