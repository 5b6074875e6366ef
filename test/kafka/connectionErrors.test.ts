// A bad --bootstrap, as a user types it: `orderly run` and `orderly parked` fail within 10 s,
// naming the address and whether its name did not resolve or its connection was refused (no
// broker is needed: these run beside the suite's broker, not against it). And a resolution that is
// not exactly one of --decision and --discard is refused before any connection.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unusedPort } from '../localPorts.js';
import { DISPUTES_MODULE, runOrderly as orderly } from './worker.js';

const stateDir = () => join(mkdtempSync(join(tmpdir(), 'orderly-bootstrap-')), 'state');

describe('a bad --bootstrap names the address and the cause', () => {
  it('orderly run: malformed, refused at once', () => {
    const run = orderly(['run', DISPUTES_MODULE, '--bootstrap', 'localhost', '--group', 'g', '--state-dir', stateDir()]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("orderly run: bootstrap server 'localhost' in 'localhost' is not host:port (a port from 1 to 65535)");
  });

  it('orderly run: an unused local port, connection refused', async () => {
    const port = await unusedPort();
    const run = orderly(['run', DISPUTES_MODULE, '--bootstrap', `127.0.0.1:${port}`, '--group', 'g', '--state-dir', stateDir()]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`orderly run: cannot reach Kafka at '127.0.0.1:${port}': 127.0.0.1:${port}: connection refused by 127.0.0.1:${port}`);
  });

  it('orderly run: a name under .invalid, the name did not resolve', () => {
    const run = orderly(['run', DISPUTES_MODULE, '--bootstrap', 'kafka.orderly-test.invalid:9092', '--group', 'g', '--state-dir', stateDir()]);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(
      /orderly run: cannot reach Kafka at 'kafka\.orderly-test\.invalid:9092': kafka\.orderly-test\.invalid:9092: the name 'kafka\.orderly-test\.invalid' did not resolve/,
    );
  });

  it('orderly parked: the same refusals', async () => {
    const port = await unusedPort();
    const common = ['--group', 'g', '--topology', DISPUTES_MODULE];
    const refused = orderly(['parked', 'list', '--bootstrap', `127.0.0.1:${port}`, ...common]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`orderly parked: cannot reach Kafka at '127.0.0.1:${port}': 127.0.0.1:${port}: connection refused`);
    const unresolved = orderly(['parked', 'resolve', '0', 'acct-1', '--discard', '--bootstrap', 'kafka.orderly-test.invalid:9092', ...common]);
    expect(unresolved.status).toBe(1);
    expect(unresolved.stderr).toMatch(/orderly parked: cannot reach Kafka at 'kafka\.orderly-test\.invalid:9092': .*did not resolve/);
  });
});

describe('orderly parked resolve arguments', () => {
  it('orderly parked resolve: exactly one of --decision and --discard, checked before any connection', () => {
    const common = ['parked', 'resolve', '0', 'acct-1', '--bootstrap', '127.0.0.1:1', '--group', 'g', '--topology', DISPUTES_MODULE];
    for (const flags of [['--decision', '{"action":"refund","rationale":"x"}', '--discard'], []]) {
      const run = orderly([...common, ...flags]);
      expect(run.status).toBe(1);
      expect(run.stderr).toBe('orderly parked: give exactly one of --decision JSON and --discard\n');
    }
  });
});
