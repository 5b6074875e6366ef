import { serveLab } from './server.js';

/** Options of `orderly lab`, as commander parses them. */
export interface LabCommandOptions {
  readonly port: string;
  readonly host: string;
}

/** `orderly lab`: serves the lab page until the process is stopped. */
export async function runLabCommand(options: LabCommandOptions): Promise<void> {
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new Error(`orderly lab: --port must be a whole number from 0 to 65535, got '${options.port}'`);
  }
  const lab = await serveLab({ port, host: options.host });
  process.stdout.write(`orderly lab: ${lab.url} (Ctrl-C to stop)\n`);
  const stop = () => void lab.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
