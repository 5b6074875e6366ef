import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BootstrapError, checkBootstrap, parseBootstrap } from '../../../src/kafka/bootstrapCheck.js';
import { unusedPort } from '../../localPorts.js';

let listening: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (listening ? listening.close(() => resolve()) : resolve()));
  listening = undefined;
});

async function listeningPort(): Promise<number> {
  listening = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => listening!.listen(0, '127.0.0.1', resolve));
  return (listening.address() as { port: number }).port;
}

describe('parseBootstrap', () => {
  it('reads host:port lists, IPv6 in brackets and a protocol prefix', () => {
    expect(parseBootstrap('127.0.0.1:9092, kafka-1.example.com:19092')).toEqual([
      { host: '127.0.0.1', port: 9092, address: '127.0.0.1:9092' },
      { host: 'kafka-1.example.com', port: 19092, address: 'kafka-1.example.com:19092' },
    ]);
    expect(parseBootstrap('[::1]:9092')).toEqual([{ host: '::1', port: 9092, address: '[::1]:9092' }]);
    expect(parseBootstrap('PLAINTEXT://localhost:9092')).toEqual([{ host: 'localhost', port: 9092, address: 'PLAINTEXT://localhost:9092' }]);
  });

  it.each(['localhost', 'localhost:', ':9092', 'localhost:0', 'localhost:70000', 'local host:9092', 'localhost:90a2', '127.0.0.1:9092,,'])(
    'refuses %j at once, naming the entry and the form',
    (bootstrap) => {
      expect(() => parseBootstrap(bootstrap)).toThrow(BootstrapError);
      expect(() => parseBootstrap(bootstrap)).toThrow(
        /is not host:port \(a port from 1 to 65535\); give host:port\[,host:port\.\.\.\], e\.g\. 127\.0\.0\.1:9092/,
      );
    },
  );

  it('refuses an empty list', () => {
    expect(() => parseBootstrap('')).toThrow('bootstrap servers are empty; give host:port[,host:port...], e.g. 127.0.0.1:9092');
  });
});

describe('checkBootstrap', () => {
  it('rejects a malformed list before any lookup', async () => {
    await expect(checkBootstrap('127.0.0.1')).rejects.toThrow("bootstrap server '127.0.0.1' in '127.0.0.1' is not host:port");
  });

  it('names the address and says the connection was refused on an unused local port', async () => {
    const port = await unusedPort();
    await expect(checkBootstrap(`127.0.0.1:${port}`)).rejects.toThrow(
      `cannot reach Kafka at '127.0.0.1:${port}': 127.0.0.1:${port}: connection refused by 127.0.0.1:${port} (nothing listens there); check the address and that the broker runs and listens there`,
    );
  });

  it('names the address and says the name did not resolve for a name under .invalid (with its own lookup timeout)', async () => {
    const error = await checkBootstrap('kafka.orderly-test.invalid:9092', { lookupTimeoutMs: 2_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BootstrapError);
    // ENOTFOUND where a resolver answers, orderly's own timeout where none does.
    expect((error as Error).message).toMatch(
      /^cannot reach Kafka at 'kafka\.orderly-test\.invalid:9092': kafka\.orderly-test\.invalid:9092: the name 'kafka\.orderly-test\.invalid' did not resolve (\(ENOTFOUND\)|\(EAI_AGAIN\)|within 2000 ms);/,
    );
  });

  it('passes when a server listens, even when another of the list does not', async () => {
    const port = await listeningPort();
    await expect(checkBootstrap(`127.0.0.1:${port}`)).resolves.toBeUndefined();
    await expect(checkBootstrap(`127.0.0.1:${await unusedPort()},127.0.0.1:${port}`)).resolves.toBeUndefined();
  });

  it('names every server when none answers', async () => {
    const [a, b] = [await unusedPort(), await unusedPort()];
    const message = await checkBootstrap(`127.0.0.1:${a},nowhere.invalid:${b}`, { lookupTimeoutMs: 2_000 }).catch((e: Error) => e.message);
    expect(message).toContain(`127.0.0.1:${a}: connection refused`);
    expect(message).toContain(`nowhere.invalid:${b}: the name 'nowhere.invalid' did not resolve`);
  });
});
