import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import pino, { type Logger } from 'pino';
import { checkBootstrap } from '../../src/kafka/bootstrapCheck.js';
import { gatewayServer } from './httpServer.js';
import { jobTopics } from './jobRequest.js';
import { createJobTopics, JobFeed } from './jobTopicsOnKafka.js';
import { JobTable } from './jobTable.js';

export interface GatewayOptions {
  /** Kafka's bootstrap servers, `host:port`. */
  readonly bootstrap: string;
  /** 0: any free port. */
  readonly port: number;
  /** @defaultValue `127.0.0.1` */
  readonly host?: string;
  /** The request topic; status and responses go to `<topic>.status` and `<topic>.responses`. @defaultValue `agent-jobs` */
  readonly topic?: string;
  /** Partitions of the topics it creates. @defaultValue 4 */
  readonly partitions?: number;
  readonly logger?: Logger;
  /** Called when Kafka fails for good. @defaultValue log it and exit */
  readonly onFatal?: (error: Error) => void;
}

export interface RunningGateway {
  /** `http://host:port` */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Starts the gateway: creates the missing topics, reads them to their end to rebuild its table of
 * jobs, then listens. Nothing it holds is lost by a restart: it is all on the topics.
 */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const logger = options.logger ?? pino({ level: 'info' });
  const topics = jobTopics(options.topic ?? 'agent-jobs');
  const onFatal =
    options.onFatal ??
    ((error: Error) => {
      logger.fatal({ err: error }, 'Kafka failed; the gateway stops');
      process.exit(1);
    });
  // A wrong address fails here within seconds, naming its cause, instead of at a client's time-out.
  await checkBootstrap(options.bootstrap);
  await createJobTopics(options.bootstrap, topics, options.partitions ?? 4);
  const table = new JobTable();
  const feed = await JobFeed.open(
    options.bootstrap,
    topics,
    logger,
    { requests: (r) => table.addRequests(r), status: (r) => table.addStatuses(r), responses: (r) => table.addResponses(r) },
    onFatal,
  );
  const server: Server = gatewayServer({ table, requestTopic: topics.requests, produce: (record) => feed.produce([record]) });
  server.listen(options.port, options.host ?? '127.0.0.1');
  try {
    await once(server, 'listening');
  } catch (error) {
    await feed.close();
    throw new Error(`the gateway could not listen on ${options.host ?? '127.0.0.1'}:${options.port}: ${(error as Error).message}`, { cause: error });
  }
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  logger.info({ url, topics }, 'agent gateway listening');
  return {
    url,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await feed.close();
    },
  };
}
