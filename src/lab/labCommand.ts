import { serveLab } from './server.js';

/** Options of `orderly lab`, as commander parses them. */
export interface LabCommandOptions {
  readonly port: number;
  readonly host: string;
}

/** `orderly lab`: serves the lab page until the process is stopped. */
export async function runLabCommand(options: LabCommandOptions): Promise<void> {
  const lab = await serveLab({ port: options.port, host: options.host });
  process.stdout.write(`orderly lab: ${lab.url} (Ctrl-C to stop)\n`);
  const stop = () => void lab.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
