// How KafkaLog answers librdkafka's rebalances. Exactly-once, a worker fenced out of its group (partitions lost without a revocation): the work
// in flight of the lost partitions must end before the open transaction is aborted, or what it
// records lands in the next transaction, which the worker commits once it has rejoined the group
// (seen on the broker: 3 decisions a read_committed reader saw twice). White-box: the librdkafka
// clients are replaced by fakes that record the order of calls, so the order is checked without a
// broker and without timing.
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { LogListener, TopicPartition } from '../../../../src/ports/log.js';
import type { AckedProducer } from '../../../../src/kafka/log/ackedProducer.js';
import { KafkaLog } from '../../../../src/kafka/log/kafkaLog.js';
import { Transactions } from '../../../../src/kafka/log/transactions.js';
import type { CommitWaiter } from '../../../../src/kafka/log/commitWaiter.js';
import { isCommitRefused } from '../../../../src/ports/log.js';

const ERR_REVOKE_PARTITIONS = -174;
const ERR_ASSIGN_PARTITIONS = -175;
const tp = (partition: number): TopicPartition => ({ topic: 'orders', partition });
const ids = (tps: readonly TopicPartition[]) => tps.map((t) => `${t.topic}/${t.partition}`).join(',');

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

interface Rig {
  readonly log: KafkaLog;
  readonly calls: string[];
  /** A rebalance callback from librdkafka: these partitions were lost. */
  lose(tps: readonly TopicPartition[]): void;
  /** A rebalance callback from librdkafka: these partitions are revoked (the group takes them back). */
  revoke(tps: readonly TopicPartition[]): void;
  /** librdkafka assigns these partitions. */
  assign(tps: readonly TopicPartition[]): void;
  /** The log is closing, as after `close()` was called. */
  closing(): void;
  /** A write of the open transaction failed (fenced by a new generation, say). */
  abortFromProduce(): void;
  /** Runs a unit of the partition's work in the open transaction (as the engine's `log.atomic`); settles when it has run. */
  unit(partition: TopicPartition, work?: () => void): Promise<void>;
  /** Settles once every queued rebalance step has run. */
  settled(): Promise<void>;
}

async function rig(
  options: {
    assigned?: (tps: readonly TopicPartition[]) => Promise<void>;
    lost?: () => Promise<void>;
    revoked?: () => Promise<void>;
    disconnected?: boolean;
    /** At-least-once: no transactions; the consumer commits offsets itself. */
    atLeastOnce?: boolean;
    /** Hears the log's lines (silent by default). */
    logger?: pino.Logger;
  } = {},
): Promise<Rig> {
  const calls: string[] = [];
  let assignmentLost = true;
  const logger = options.logger ?? pino({ level: 'silent' });
  const producer = {
    beginTransaction: async () => void calls.push('begin'),
    abortTransaction: async () => void calls.push('abort'),
  } as unknown as AckedProducer;
  const consumer = {
    assignmentLost: () => assignmentLost,
    rebalanceProtocol: () => 'COOPERATIVE',
    pause: () => undefined,
    resume: () => undefined,
    incrementalUnassign: (a: TopicPartition[]) => void calls.push(`unassign ${ids(a)}`),
    incrementalAssign: (a: TopicPartition[]) => {
      if (options.disconnected) throw new Error('KafkaConsumer is disconnected');
      calls.push(`assign ${ids(a)}`);
    },
    committed: (tps: TopicPartition[], _t: number, cb: (e: unknown, o: unknown[]) => void) =>
      cb(
        undefined,
        tps.map((t) => ({ ...t, offset: 0 })),
      ),
    seek: (_tpo: unknown, _t: number, cb: (e: unknown) => void) => cb(undefined),
    // As librdkafka: the commit is enqueued, and its offset_commit_cb comes later.
    commit: (offsets: Array<TopicPartition & { offset: number }>) => {
      calls.push(`commit ${offsets.map((o) => `${o.topic}/${o.partition}@${o.offset}`).join(',')}`);
      setImmediate(() => (inner.commits as CommitWaiter).settled(undefined, offsets));
    },
  };
  const listener: LogListener = {
    assigned: async (tps) => {
      calls.push(`assigned ${ids(tps)}`);
      await options.assigned?.(tps);
    },
    revoked: async (tps) => {
      calls.push(`revoked ${ids(tps)}`);
      await options.revoked?.();
    },
    lost: async (tps) => {
      calls.push(`lost ${ids(tps)}`);
      await options.lost?.();
    },
    records: () => undefined,
    failed: (error) => void calls.push(`failed ${error.message}`),
  };
  const log = new KafkaLog({
    settings: { bootstrap: '127.0.0.1:9', group: 'g' },
    logger,
    ...(options.atLeastOnce ? {} : { exactlyOnce: { transactionalId: 't', timeoutMs: 10_000 } as never }),
  });
  const inner = log as unknown as Record<string, unknown>;
  const transactions = await Transactions.begin(
    producer,
    () => consumer as never,
    logger,
    { callTimeoutMs: 1_000, maxOpenMs: 60_000 },
    () => undefined,
  );
  calls.length = 0;
  Object.assign(inner, { consumer, producer, listener, ...(options.atLeastOnce ? {} : { transactions }) });
  const partitions = inner.partitions as Map<string, unknown>;
  for (const t of [tp(0), tp(1)])
    partitions.set(`${t.topic}/${t.partition}`, { tp: t, ownership: 'owned', paused: false, held: [], fetchPaused: false, position: 0 });
  const onRebalance = inner.onRebalance as (e: unknown, a: TopicPartition[]) => void;
  const resetAfterAbort = inner.resetAfterAbort as (cause: Error) => void;
  return {
    log,
    calls,
    lose: (tps) => onRebalance.call(log, { code: ERR_REVOKE_PARTITIONS }, [...tps]),
    revoke: (tps) => {
      assignmentLost = false;
      onRebalance.call(log, { code: ERR_REVOKE_PARTITIONS }, [...tps]);
      assignmentLost = true;
    },
    assign: (tps) => onRebalance.call(log, { code: ERR_ASSIGN_PARTITIONS }, [...tps]),
    closing: () => void (inner.closing = true),
    abortFromProduce: () => resetAfterAbort.call(log, new Error('the transaction was aborted under a write')),
    unit: (partition, work) => log.atomic!(async () => work?.(), partition),
    settled: async () => {
      // Each step may queue the next: wait until the chain stops growing.
      for (let last; last !== inner.rebalances;) {
        last = inner.rebalances;
        await last;
      }
      transactions.close();
    },
  };
}

describe('KafkaLog, exactly-once: partitions lost without a revocation', () => {
  it("ends the lost partitions' work in flight before it aborts the open transaction", async () => {
    const { calls, lose, settled } = await rig();
    lose([tp(0), tp(1)]);
    await settled();
    expect(calls.indexOf('lost orders/0,orders/1')).toBeGreaterThanOrEqual(0);
    expect(calls.indexOf('lost orders/0,orders/1'), calls.join(' | ')).toBeLessThan(calls.indexOf('abort'));
    // And the transaction begun after the abort holds nothing of them: nothing of theirs ran after it.
    expect(calls.slice(calls.indexOf('abort'))).toEqual(['abort', 'begin', 'lost orders/0,orders/1', 'unassign orders/0,orders/1']);
  });

  it('a reset under way when the partitions are lost (it assigned them to the engine again) is followed by one that drops them before its abort', async () => {
    const restoring = deferred();
    let first = true;
    const { calls, lose, abortFromProduce, unit, settled } = await rig({
      assigned: () => {
        if (!first) return Promise.resolve();
        first = false;
        return restoring.promise;
      },
    });
    // Both partitions' work is in the open transaction.
    await unit(tp(0));
    await unit(tp(1));
    abortFromProduce();
    // The reset has aborted and is restoring the partitions it took back (each on its own) when they are lost.
    await new Promise((r) => setImmediate(r));
    expect(calls).toContain('assigned orders/0');
    expect(calls).toContain('assigned orders/1');
    lose([tp(0), tp(1)]);
    restoring.resolve();
    await settled();
    const secondAbort = calls.lastIndexOf('abort');
    expect(
      calls.filter((c) => c === 'abort'),
      calls.join(' | '),
    ).toHaveLength(2);
    expect(calls.slice(calls.indexOf('assigned orders/1') + 1, secondAbort + 1), calls.join(' | ')).toEqual(['lost orders/0,orders/1', 'abort']);
  });

  it('other causes while a reset is under way are covered by it: one reset, not one per failed write', async () => {
    const { calls, abortFromProduce, settled } = await rig();
    abortFromProduce();
    abortFromProduce();
    abortFromProduce();
    await settled();
    expect(calls.filter((c) => c === 'abort')).toHaveLength(1);
  });
});

describe('KafkaLog, exactly-once: an aborted transaction resets the partitions whose work it held', () => {
  it('resets only the partitions whose units entered it; a unit of another partition that comes meanwhile waits and enters the next one', async () => {
    const dropping = deferred();
    const { log, calls, abortFromProduce, unit, settled } = await rig({ lost: () => dropping.promise });
    await unit(tp(0));
    abortFromProduce();
    for (let i = 0; i < 10 && !calls.includes('lost orders/0'); i += 1) await new Promise((r) => setImmediate(r));
    // Partition 1's unit comes while the transaction is being thrown away: it runs after the abort.
    const other = unit(tp(1), () => calls.push('unit orders/1'));
    dropping.resolve();
    await settled();
    await other;
    expect(calls, calls.join(' | ')).toEqual(['lost orders/0', 'abort', 'begin', 'unit orders/1', 'assigned orders/0']);
    expect(log.owned().map((t) => t.partition)).toEqual([0, 1]);
  });

  it('a partition revoked while the reset waited (its revocation queued behind it) is dropped as lost before the abort, never committed nor assigned again', async () => {
    const restoring = deferred();
    const { log, calls, assign, revoke, abortFromProduce, unit, settled } = await rig({
      assigned: (tps) => (tps.some((t) => t.partition === 2) ? restoring.promise : Promise.resolve()),
    });
    // A new partition restores: the steps after it wait.
    assign([tp(2)]);
    await new Promise((r) => setImmediate(r));
    await unit(tp(0));
    // The transaction fails (its reset queued behind the restore), then the group takes partition 0 back.
    abortFromProduce();
    revoke([tp(0)]);
    restoring.resolve();
    await settled();
    const abort = calls.indexOf('abort');
    // Lost before the abort: the engine drops it without a commit (a revocation would commit
    // events whose outputs and state went down with the abort).
    expect(calls.indexOf('lost orders/0'), calls.join(' | ')).toBeGreaterThanOrEqual(0);
    expect(calls.indexOf('lost orders/0'), calls.join(' | ')).toBeLessThan(abort);
    expect(calls.slice(abort), calls.join(' | ')).not.toContain('assigned orders/0');
    expect(log.owned().map((t) => t.partition)).toEqual([1, 2]);
  });

  it('a transaction no unit entered resets nothing: it is aborted and the partitions go on', async () => {
    const { log, calls, abortFromProduce, settled } = await rig();
    abortFromProduce();
    await settled();
    expect(calls).toEqual(['abort', 'begin']);
    expect(log.owned().map((t) => t.partition)).toEqual([0, 1]);
  });
});

describe('KafkaLog: partitions assigned together are restored side by side', () => {
  it('hands each partition to librdkafka as soon as the engine has restored it, while the others still restore', async () => {
    const slow = deferred();
    const { log, calls, assign, settled } = await rig({ assigned: (tps) => (tps[0]!.partition === 2 ? slow.promise : Promise.resolve()) });
    assign([tp(2), tp(3)]);
    for (let i = 0; i < 5 && !calls.includes('assign orders/3'); i += 1) await new Promise((r) => setImmediate(r));
    // Both restores started at once; partition 3 runs (assigned in librdkafka, owned) while 2 restores.
    expect(calls).toEqual(['assigned orders/2', 'assigned orders/3', 'assign orders/3']);
    expect(log.owned().map((t) => t.partition)).toEqual([0, 1, 3]);
    slow.resolve();
    await settled();
    expect(calls).toEqual(['assigned orders/2', 'assigned orders/3', 'assign orders/3', 'assign orders/2']);
    expect(log.owned().map((t) => t.partition)).toEqual([0, 1, 2, 3]);
  });
});

describe('KafkaLog: a rebalance while it closes', () => {
  it('an assignment that comes after the consumer disconnected (a rejoin under way at the stop) fails nothing and reaches no engine', async () => {
    const { calls, assign, closing, settled } = await rig({ disconnected: true });
    closing();
    assign([tp(2)]);
    await settled();
    expect(calls).toEqual([]);
  });

  it('an assignment while it closes is answered at once, never handed to the stopped engine', async () => {
    const { calls, assign, closing, settled } = await rig();
    closing();
    assign([tp(2)]);
    await settled();
    expect(calls).toEqual(['assign orders/2']);
  });
});

describe('KafkaLog: a revocation whose listener fails', () => {
  it('still gives the partitions back to librdkafka, so that the group can rebalance and the consumer close, and fails the log with the error', async () => {
    const { log, calls, revoke, settled } = await rig({
      atLeastOnce: true,
      revoked: () => Promise.reject(new Error('the commit at the revocation was refused')),
    });
    revoke([tp(1)]);
    await settled();
    expect(calls).toEqual(['revoked orders/1', 'unassign orders/1', 'failed rebalance callback failed: the commit at the revocation was refused']);
    expect(log.owned().map((t) => t.partition)).toEqual([0]);
  });
});

describe('KafkaLog, at-least-once: a commit that names a partition lost meanwhile', () => {
  it('commits the offsets of the partitions still owned, and refuses the commit for the lost one, so that the engine never counts it as committed', async () => {
    const { log, calls, lose } = await rig({ atLeastOnce: true });
    lose([tp(1)]);
    const committed = log.commit([
      { ...tp(0), offset: 5 },
      { ...tp(1), offset: 7 },
    ]);
    await expect(committed).rejects.toSatisfy(isCommitRefused);
    await expect(committed).rejects.toThrow('Kafka commit of orders/1@7 refused: this worker lost these partitions in a rebalance');
    expect(calls.filter((c) => c.startsWith('commit'))).toEqual(['commit orders/0@5']);
  });

  it('a commit of owned partitions only settles as before', async () => {
    const { log, calls } = await rig({ atLeastOnce: true });
    await log.commit([{ ...tp(0), offset: 5 }]);
    expect(calls).toEqual(['commit orders/0@5']);
  });
});

describe('KafkaLog: a rebalance step that does not end', () => {
  afterEach(() => void vi.useRealTimers());

  it('is logged every 10 s with what it waits for, until it ends', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    const lines: Array<{ msg: string; step: string; unacknowledgedWrites: number }> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const stuck = deferred();
    const { lose, settled } = await rig({ atLeastOnce: true, logger, lost: () => stuck.promise });
    lose([tp(1)]);
    await vi.advanceTimersByTimeAsync(9_999);
    expect(lines).toEqual([]);
    await vi.advanceTimersByTimeAsync(10_001);
    expect(lines.map((l) => l.msg)).toEqual([
      "rebalance step 'loss of orders/1' still running after 10 s: it waits for the engine to end the partitions' events in flight (their model calls are aborted; an event whose effect is being recorded waits for Kafka to acknowledge its writes); 0 writes are not acknowledged by Kafka yet",
      "rebalance step 'loss of orders/1' still running after 20 s: it waits for the engine to end the partitions' events in flight (their model calls are aborted; an event whose effect is being recorded waits for Kafka to acknowledge its writes); 0 writes are not acknowledged by Kafka yet",
    ]);
    stuck.resolve();
    await settled();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(lines).toHaveLength(2);
  });
});
