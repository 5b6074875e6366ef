import { loadProject, UsageError, type LoadedProject } from '../static/project.js';

/**
 * Opens the project that `orderly <command> INPUTS` names, relative to the working directory; on a
 * usage error (an input that does not exist) prints it and returns undefined: exit code 2.
 */
export function openProject(command: string, inputs: readonly string[]): { loaded: LoadedProject; cwd: string } | undefined {
  const cwd = process.cwd();
  try {
    return { loaded: loadProject(inputs, cwd), cwd };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`orderly ${command}: ${error.message}\n`);
    return undefined;
  }
}
