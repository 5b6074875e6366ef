import { Command } from 'commander';
import { packageVersion } from './packageVersion.js';
import { registerParkedCommand } from './parkedCommand.js';
import { registerRunCommand } from './runCommand.js';
import { registerScenarioCommand } from './scenarioCommand.js';
import { registerStaticCommands } from './staticCommands.js';

/**
 * Builds the `orderly` command line. Each command module declares only its options; its action
 * imports the command's code when it runs, so `--help` and `scenario` load no native Kafka client.
 */
export function createProgram(): Command {
  const program = new Command('orderly')
    .description('per-key order, exactly-once effects and parking for agent steps in Kafka consumers')
    .version(packageVersion(), '-V, --version', 'print the version of orderly')
    .showHelpAfterError();
  registerScenarioCommand(program);
  registerRunCommand(program);
  registerParkedCommand(program);
  registerStaticCommands(program);
  program
    .command('lab')
    .description('serve the lab page: the worked example run in the browser, drawn as a timeline, a control for every setting')
    .option('--port <n>', 'the port to listen on (0: any free port)', '8080')
    .option('--host <address>', 'the address to listen on', '127.0.0.1')
    .action(async (options: { port: string; host: string }) => (await import('../lab/labCommand.js')).runLabCommand(options));
  return program;
}

await createProgram().parseAsync(process.argv);
