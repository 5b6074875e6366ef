import { execFile } from 'node:child_process';
import { resolve } from 'node:path';

export const REPO = resolve(import.meta.dirname, '../../..');

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `./bin/orderly ARGS` (the compiled CLI) as a child process in the repository's root. */
export function orderlyCli(args: readonly string[]): Promise<CliResult> {
  return new Promise((done) =>
    execFile(process.execPath, ['bin/orderly', ...args], { cwd: REPO }, (error, stdout, stderr) =>
      done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}
