import type { Logger } from 'pino';

/** What librdkafka emits as `event.log`: a syslog severity, a facility and the message. */
export interface LibrdkafkaLogLine {
  readonly severity: number;
  readonly fac: string;
  readonly message: string;
}

/** A librdkafka error as the client reports it. */
export interface LibrdkafkaError {
  readonly message: string;
  readonly code: number;
  readonly isFatal?: boolean;
}

/** The events of a librdkafka client that carry its logs and errors. */
interface LoggingClient {
  on(event: 'event.log', listener: (line: LibrdkafkaLogLine) => void): unknown;
  on(event: 'event.error', listener: (error: LibrdkafkaError) => void): unknown;
}

/** The group errors that end an open transaction when a rebalance moves the group on. */
const REBALANCE_ERRORS = /\((ILLEGAL_GENERATION|UNKNOWN_MEMBER_ID|REBALANCE_IN_PROGRESS|FENCED_MEMBER_EPOCH|STALE_MEMBER_EPOCH)\)\s*$/;

/**
 * Sends a librdkafka client's log lines and errors to pino, at the level of their syslog severity
 * (0-3 error, 4 warn, 5-6 info, 7 debug). `onFatal` hears a fatal error (the client is unusable).
 */
export function logClientTo(client: LoggingClient, logger: Logger, onFatal: (error: Error) => void): void {
  client.on('event.log', (line) => {
    const fields = { librdkafka: line.fac };
    // orderly sets the gap-less guarantee on purpose (see producerConfig): librdkafka's warning that
    // it is experimental says nothing the operator can act on, so it is not one.
    if (line.fac === 'CONFWARN' && line.message.includes('enable.gapless.guarantee is experimental')) logger.debug(fields, line.message);
    // A transaction that a rebalance cut short is routine: orderly aborts it and resets the
    // partitions it held (docs/delivery.md). At error, it would page someone for a normal event.
    else if (line.fac === 'TXNERR' && REBALANCE_ERRORS.test(line.message))
      logger.warn(fields, `${line.message}: a rebalance moved the group while the transaction was open; orderly aborts it and resets the partitions it held`);
    else if (line.severity <= 3) logger.error(fields, line.message);
    else if (line.severity === 4) logger.warn(fields, line.message);
    else if (line.severity <= 6) logger.info(fields, line.message);
    else logger.debug(fields, line.message);
  });
  client.on('event.error', (error) => {
    if (error.isFatal) {
      logger.error({ code: error.code }, `fatal Kafka client error: ${error.message}`);
      onFatal(new Error(`fatal Kafka client error: ${error.message} (code ${error.code})`));
    } else {
      // Transport errors (a broker down, a connection refused) are retried by librdkafka itself.
      logger.warn({ code: error.code }, error.message);
    }
  });
}
