import type { Command } from 'commander';
import { toPort } from './optionValues.js';

/** `orderly lab`: serves the lab page; its code (and the page) load only when it runs. */
export function registerLabCommand(program: Command): void {
  program
    .command('lab')
    .description('serve the lab page: the worked example run in the browser, drawn as a timeline, a control for every setting')
    .option('--port <n>', 'the port to listen on (0: any free port)', toPort, 8080)
    .option('--host <address>', 'the address to listen on', '127.0.0.1')
    .action(async (options: { port: number; host: string }) => (await import('../lab/labCommand.js')).runLabCommand(options));
}
