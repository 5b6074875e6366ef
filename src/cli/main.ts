import { Command } from 'commander';
import { registerRunCommand } from './runCommand.js';
import { registerScenarioCommand } from './scenarioCommand.js';

/** Builds the `orderly` command line. */
export function createProgram(): Command {
  const program = new Command('orderly')
    .description('per-key order, exactly-once effects and parking for agent steps in Kafka consumers')
    .showHelpAfterError();
  registerScenarioCommand(program);
  registerRunCommand(program);
  return program;
}

await createProgram().parseAsync(process.argv);
