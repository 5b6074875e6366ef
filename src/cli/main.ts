import { Command } from 'commander';
import { registerParkedCommand } from './parkedCommand.js';
import { registerRunCommand } from './runCommand.js';
import { registerScenarioCommand } from './scenarioCommand.js';
import { registerStaticCommands } from './staticCommands.js';

/** Builds the `orderly` command line. */
export function createProgram(): Command {
  const program = new Command('orderly')
    .description('per-key order, exactly-once effects and parking for agent steps in Kafka consumers')
    .showHelpAfterError();
  registerScenarioCommand(program);
  registerRunCommand(program);
  registerParkedCommand(program);
  registerStaticCommands(program);
  return program;
}

await createProgram().parseAsync(process.argv);
