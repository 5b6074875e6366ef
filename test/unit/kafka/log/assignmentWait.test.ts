import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AssignmentWait } from '../../../../src/kafka/log/assignmentWait.js';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

describe('AssignmentWait', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('says why no partition came yet, first after firstAfterMs, then every everyMs, naming the session timeout that ends the wait', () => {
    const { logger, lines } = capture();
    const wait = new AssignmentWait({ bootstrap: '127.0.0.1:9092', group: 'fraud', sessionTimeoutMs: 6_000 }, logger, { firstAfterMs: 1_000, everyMs: 5_000 });
    wait.start();
    vi.advanceTimersByTime(999);
    expect(lines).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ group: 'fraud', waitedMs: 1_000, sessionTimeoutMs: 6_000 });
    expect(lines[0]!.msg).toContain("for partitions of group 'fraud': if a worker of it stopped without leaving it");
    expect(lines[0]!.msg).toContain('session.timeout.ms = 6000 ms');
    vi.advanceTimersByTime(10_000);
    expect(lines.map((l) => l.waitedMs)).toEqual([1_000, 6_000, 11_000]);
  });

  it('stops at the first assignment', () => {
    const { logger, lines } = capture();
    const wait = new AssignmentWait({ bootstrap: '127.0.0.1:9092', group: 'fraud' }, logger);
    wait.start();
    vi.advanceTimersByTime(1_000);
    wait.stop();
    vi.advanceTimersByTime(60_000);
    expect(lines).toEqual([]);
  });

  it("names the broker's session timeout under the consumer protocol, where the client sets none", () => {
    const { logger, lines } = capture();
    const wait = new AssignmentWait({ bootstrap: '127.0.0.1:9092', group: 'fraud', groupProtocol: 'consumer' }, logger);
    wait.start();
    vi.advanceTimersByTime(2_000);
    expect(lines[0]).not.toHaveProperty('sessionTimeoutMs');
    expect(lines[0]!.msg).toContain('group.consumer.session.timeout.ms');
    wait.stop();
  });
});
