import { Command } from 'commander';
import { packageVersion } from './packageVersion.js';
import { registerLabCommand } from './labCommand.js';
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
    // A hint, not the whole help: an error's own line stays the last thing on the screen.
    .showHelpAfterError("(run 'orderly help <command>' for its options)");
  registerScenarioCommand(program);
  registerRunCommand(program);
  registerParkedCommand(program);
  registerStaticCommands(program);
  registerLabCommand(program);
  return program;
}

await createProgram().parseAsync(process.argv);
