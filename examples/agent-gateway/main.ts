/**
 * The agent gateway: an HTTP service in front of the agent-jobs topology (topology.ts).
 *
 *     npm run gateway -- --bootstrap 127.0.0.1:9092 --port 8081 [--host 127.0.0.1] [--topic agent-jobs]
 *
 * POST /jobs { "prompt": "..." } → 202 { jobId } once the broker has the request; GET /jobs/:id →
 * the job's state; GET /jobs/:id/events → its status updates and its response as server-sent events.
 */
import { Command, InvalidArgumentError } from 'commander';
import { startGateway } from './gateway.js';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError(`a port is a whole number from 0 to 65535, got '${value}'`);
  return n;
}

const program = new Command('gateway')
  .description('HTTP gateway of the agent-jobs topology: 202 + job id, job state, server-sent events')
  .requiredOption('--bootstrap <host:port>', "Kafka's bootstrap servers")
  .requiredOption('--port <n>', 'the port to listen on (0: any free port)', port)
  .option('--host <address>', 'the address to bind', '127.0.0.1')
  .option(
    '--topic <name>',
    'the request topic (status and responses: <topic>.status, <topic>.responses)',
    `${process.env.ORDERLY_TOPIC_PREFIX ?? ''}agent-jobs`,
  )
  .parse();

const options = program.opts<{ bootstrap: string; port: number; host: string; topic: string }>();
const gateway = await startGateway(options).catch((error: Error) => {
  console.error(`gateway: ${error.message}`);
  process.exit(1);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void gateway.close().then(() => process.exit(0));
  });
}
