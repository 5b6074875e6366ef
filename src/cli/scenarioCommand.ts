import type { Command } from 'commander';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { VariantResult } from '../../testkit/scenarios/workedExample.js';

const scenarios = ['worked-example', 'migration'] as const;

/** `orderly scenario NAME [--json]`: runs a scenario on the test driver and prints its figures. */
export function registerScenarioCommand(program: Command): void {
  program
    .command('scenario')
    .description('run a scenario on the embedded test driver (in-memory log, virtual clock, LevelDB or memory state)')
    .argument('<name>', `the scenario: ${scenarios.join(', ')}`)
    .option('--json', 'print a JSON array, one object per variant (per mode, for migration)')
    .option(
      '--state-dir <dir>',
      'keep the LevelDB state under this directory, one sub-directory per variant; it must be new or empty (default: a temporary directory, removed afterwards)',
    )
    .option('--memory', 'keep the state in memory-level instead of LevelDB')
    .option('--metrics', 'print the Prometheus metrics of the run (label variant) instead of the figures')
    .action(async (name: string, options: { json?: boolean; stateDir?: string; memory?: boolean; metrics?: boolean }) => {
      if (!(scenarios as readonly string[]).includes(name)) {
        program.error(`orderly scenario: no scenario named '${name}'; the scenarios are: ${scenarios.join(', ')}`);
      }
      if (name === 'migration' && options.metrics) program.error('orderly scenario migration: --metrics is for worked-example only; use --json');
      if (options.stateDir !== undefined && !options.memory) {
        const used = await entriesOf(options.stateDir);
        if (used.length > 0) {
          program.error(
            `orderly scenario ${name}: --state-dir '${options.stateDir}' is not empty (it holds ${used
              .slice(0, 3)
              .map((e) => `'${e}'`)
              .join(', ')}${used.length > 3 ? ', ...' : ''}): ` +
              "each run's log is in memory and starts at offset 0 again, so the effect records an earlier run stored there would mark every event a duplicate (modelCalls 0); " +
              'give an empty or new directory, or omit --state-dir for a temporary one',
          );
        }
      }
      const temporary = options.memory || options.stateDir ? undefined : await mkdtemp(join(tmpdir(), 'orderly-scenario-'));
      // --memory keeps every variant's state in memory-level: --state-dir then names nothing.
      const root = options.memory ? undefined : (options.stateDir ?? temporary);
      try {
        // The scenario's code (the test driver, LevelDB) is loaded only when this command runs.
        if (name === 'migration') {
          const { runMigrations } = await import('../../testkit/scenarios/migration.js');
          const rows = await runMigrations((mode) => (root ? { stateDir: join(root, mode) } : {}));
          process.stdout.write(options.json ? `${JSON.stringify(rows, null, 2)}\n` : table(rows));
          return;
        }
        const { runWorkedExample, workedExampleVariants } = await import('../../testkit/scenarios/workedExample.js');
        if (options.metrics) {
          // Loaded only here: prom-client is the exporter's alone.
          const { scenarioMetrics } = await import('./scenarioMetrics.js');
          process.stdout.write(await scenarioMetrics((variant) => (root ? { stateDir: join(root, variant) } : {})));
          return;
        }
        const results: VariantResult[] = [];
        for (const variant of workedExampleVariants) {
          results.push(await runWorkedExample(variant, root ? { stateDir: join(root, variant) } : {}));
        }
        process.stdout.write(options.json ? `${JSON.stringify(results, null, 2)}\n` : table(results));
      } finally {
        if (temporary) await rm(temporary, { recursive: true, force: true });
      }
    });
}

/** The entries of a directory; none when it does not exist (the run creates it). */
async function entriesOf(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

function table<R extends object>(results: readonly R[]): string {
  const columns = Object.keys(results[0]!) as Array<keyof R>;
  const rows = [columns.map(String), ...results.map((r) => columns.map((c) => String(r[c])))];
  const widths = columns.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  return `${[line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n')}\n`;
}
