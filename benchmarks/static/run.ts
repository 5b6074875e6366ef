/**
 * Times `orderly describe` and `orderly lint` on a generated project: `npx tsx benchmarks/static/run.ts
 * [--files 200]`. Each runs as the CLI does, in a fresh process; the figures are wall-clock and CPU
 * seconds (user + system, the process and its children), with the load average at the start.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { generateProject } from './generateProject.js';

const repo = resolve(import.meta.dirname, '../..');
const outputFile = join(os.tmpdir(), `orderly-static-bench-${process.pid}.json`);

interface Timing {
  readonly command: string;
  readonly wallSeconds: number;
  readonly cpuSeconds: number;
  readonly exitCode: number;
  readonly found: number;
}

/** Runs `bin/orderly ARGS --json` in a shell that reports the CPU time of its children (bash `times`). */
function time(args: readonly string[]): Timing {
  const started = performance.now();
  const run = spawnSync('bash', ['-c', 'node bin/orderly "$@" --json > "$ORDERLY_BENCH_OUT"; code=$?; times >&2; exit $code', 'bench', ...args], {
    cwd: repo,
    env: { ...process.env, ORDERLY_BENCH_OUT: outputFile },
    encoding: 'utf8',
  });
  const wallSeconds = (performance.now() - started) / 1_000;
  // `times` prints the shell's and then its children's user and system time: "0m1.234s 0m0.123s".
  const children = run.stderr.trim().split('\n').at(-1) ?? '';
  const cpuSeconds = [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, m) => sum + Number(m[1]) * 60 + Number(m[2]), 0);
  const out = JSON.parse(readFileSync(outputFile, 'utf8')) as unknown[];
  return {
    command: `orderly ${args.join(' ')}`,
    wallSeconds: round(wallSeconds),
    cpuSeconds: round(cpuSeconds),
    exitCode: run.status ?? -1,
    found: out.length,
  };
}

const USAGE = 'npm run -s bench:static -- [--files N]: times orderly describe and orderly lint on a generated project of N files (200)\n';

function main(argv: string[]): void {
  let values: { files?: string; help?: boolean };
  try {
    ({ values } = parseArgs({ args: argv, options: { files: { type: 'string' }, help: { type: 'boolean', short: 'h' } } }));
  } catch (error) {
    process.stderr.write(`bench static: ${(error as Error).message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const files = values.files === undefined ? 200 : Number(values.files);
  if (!Number.isInteger(files) || files < 5) {
    process.stderr.write(`bench static: --files must be a whole number of at least 5, got '${values.files}'\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const dir = mkdtempSync(join(os.tmpdir(), 'orderly-static-bench-'));
  try {
    const project = generateProject(dir, files, join(repo, 'src'));
    const loadAverage = os.loadavg().map((l) => round(l));
    const describe = time(['describe', dir]);
    const lint = time(['lint', dir]);
    const report = { files: project.files, loadAverage, describe, lint, expected: { topologies: project.topologies, findings: project.violations } };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    if (describe.found !== project.topologies || lint.found !== project.violations) process.exitCode = 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(outputFile, { force: true });
  }
}

const round = (n: number): number => Number(n.toFixed(2));

main(process.argv.slice(2));
