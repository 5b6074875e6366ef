import type { Command } from 'commander';

/**
 * `orderly describe` and `orderly lint`, which read a TypeScript project with ts-morph. Each
 * command's module (and so ts-morph and the compiler) is imported only when the command runs.
 */
export function registerStaticCommands(program: Command): void {
  program
    .command('describe')
    .description('print every topology declared in a TypeScript project as describe() prints it, read from the code without running it')
    .argument('[inputs...]', 'TypeScript files, directories or tsconfig.json files (default: ./tsconfig.json)')
    .option('--json', 'an array of { file, line, name, description, unknowns }')
    .option('--mermaid', 'Mermaid flowcharts instead of describe() text')
    .action(async (inputs: string[], options: { json?: boolean; mermaid?: boolean }) => {
      const { describeCommand } = await import('./describeCommand.js'); // loads ts-morph only for this command
      process.exitCode = await describeCommand(inputs, options);
    });
  program
    .command('lint')
    .description("check every agent step's decide function and every effect through its call graph (rules: docs/lint.md)")
    .argument('[inputs...]', 'TypeScript files, directories or tsconfig.json files (default: ./tsconfig.json)')
    .option('--json', 'an array of findings { rule, file, line, message, from, chain }')
    .action(async (inputs: string[], options: { json?: boolean }) => {
      const { lintCommand } = await import('./lintCommand.js'); // loads ts-morph only for this command
      process.exitCode = await lintCommand(inputs, options);
    });
}
