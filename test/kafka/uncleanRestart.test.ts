// After a kill -9, the next worker of the group (a new member) waits for the killed one's session
// to expire before it gets partitions. It must say so while it waits: why, and for how long at most.
import { afterEach, describe, expect, inject, it } from 'vitest';
import { prefilledScenario } from './disputes.js';
import { Worker } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

const SESSION_TIMEOUT_MS = 12_000;

describe('orderly run: waiting for partitions after an unclean restart', () => {
  it('logs why it waits (the old member keeps them until its session expires) and for how long at most', async () => {
    const { prefix, group, stateDir } = await prefilledScenario(bootstrap, 'unclean', { count: 40, accounts: 4, partitions: 2 });
    const options = { bootstrap, group, stateDir, topicPrefix: prefix, args: ['--session-timeout-ms', String(SESSION_TIMEOUT_MS)] };
    const first = new Worker(options);
    workers.push(first);
    await first.waitFor('partitions', () => first.lines.some((l) => l.msg === 'assigned'));
    await first.kill();

    const next = new Worker(options);
    workers.push(next);
    await next.waitFor('partitions', () => next.lines.some((l) => l.msg === 'assigned'), 60_000);
    const assignedAt = next.lines.findIndex((l) => l.msg === 'assigned');
    const waiting = next.lines.slice(0, assignedAt).filter((l) => String(l.msg).startsWith('waiting '));
    expect(waiting.length, next.tail()).toBeGreaterThan(0);
    expect(waiting[0]).toMatchObject({ level: 30, group, sessionTimeoutMs: SESSION_TIMEOUT_MS });
    expect(String(waiting[0]!.msg)).toMatch(
      new RegExp(
        `^waiting \\d+ s for partitions of group '${group.replaceAll('.', '\\.')}': if a worker of it stopped without leaving it \\(kill -9, a crash, a cut network\\), it keeps its partitions until its session expires, at most session\\.timeout\\.ms = ${SESSION_TIMEOUT_MS} ms after it stopped`,
      ),
    );
    // Nothing more once the partitions came.
    expect(next.lines.slice(assignedAt).filter((l) => String(l.msg).startsWith('waiting '))).toEqual([]);
    // It goes on from there: the events the killed worker left are applied.
    await next.waitFor('an applied event', () => next.outcomes().some((l) => l.outcome === 'APPLIED' || l.outcome === 'DUPLICATE'));
    const code = await next.stop();
    expect(code, next.tail()).toBe(0);
  });
});
