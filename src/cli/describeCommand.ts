import type { Command } from 'commander';

/** `orderly describe MODULE [--mermaid]`: prints the operator graph of the topology that MODULE exports. */
export function registerDescribeCommand(program: Command): void {
  program
    .command('describe')
    .description('print the operator graph of the topology that MODULE exports by default (no broker needed)')
    .argument('<module>', 'a module (.js, .mjs or .ts) whose default export is a Topology (or a function returning one), as for `orderly run`')
    .option('--mermaid', 'print a Mermaid flowchart instead')
    .action(async (module: string, options: { mermaid?: boolean }) => {
      const { loadTopology } = await import('./loadTopology.js');
      try {
        const topology = await loadTopology(module);
        process.stdout.write(`${options.mermaid ? topology.toMermaid() : topology.describe()}\n`);
      } catch (error) {
        process.stderr.write(`orderly describe: ${(error as Error).message.replace(/^orderly run: /, '')}\n`);
        process.exitCode = 1;
      }
    });
}
