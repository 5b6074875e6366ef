import { EventEmitter } from 'node:events';
import pino from 'pino';
import { expect, test } from 'vitest';
import { logClientTo } from '../../../../src/kafka/log/kafkaLogger.js';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const client = new EventEmitter();
  logClientTo(client as never, logger, () => undefined);
  return { client, lines };
}

test("librdkafka's lines keep their syslog severity as pino levels", () => {
  const { client, lines } = capture();
  client.emit('event.log', { severity: 4, fac: 'CONFWARN', message: 'Configuration property foo is deprecated' });
  client.emit('event.log', { severity: 3, fac: 'FAIL', message: 'broker down' });
  client.emit('event.log', { severity: 7, fac: 'FETCH', message: 'fetching' });
  expect(lines.map((l) => [l.level, l.librdkafka])).toEqual([
    [40, 'CONFWARN'],
    [50, 'FAIL'],
    [20, 'FETCH'],
  ]);
});

test('the warning that enable.gapless.guarantee is experimental, a setting orderly makes on purpose, is logged at debug', () => {
  const { client, lines } = capture();
  client.emit('event.log', {
    severity: 4,
    fac: 'CONFWARN',
    message: '[thrd:app]: Configuration property enable.gapless.guarantee is experimental: When set to `true`, any error that could result in a gap ...',
  });
  expect(lines.map((l) => l.level)).toEqual([20]);
});

test("a transaction failed by a rebalance (librdkafka's TXNERR with ILLEGAL_GENERATION) is a warning, saying what orderly does; other TXNERR lines stay errors", () => {
  const { client, lines } = capture();
  const failed =
    '[thrd:main]: Current transaction failed in state InTransaction: Failed to commit offsets to transaction on broker 127.0.0.1:9092/1: in[0](Broker: Specified group generation id is not valid) (after 4ms)';
  client.emit('event.log', { severity: 3, fac: 'TXNERR', message: `${failed} (ILLEGAL_GENERATION)` });
  client.emit('event.log', { severity: 3, fac: 'TXNERR', message: `${failed} (TRANSACTION_COORDINATOR_FENCED)` });
  expect(lines.map((l) => [l.level, l.msg])).toEqual([
    [40, `${failed} (ILLEGAL_GENERATION): a rebalance moved the group while the transaction was open; orderly aborts it and resets the partitions it held`],
    [50, `${failed} (TRANSACTION_COORDINATOR_FENCED)`],
  ]);
});
