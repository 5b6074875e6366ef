// Issue 12 §2 on the real broker: under park({ onExhausted: 'fail' }) a poison event stops
// `./bin/orderly run` with an error naming the operator and the event; the group's committed offset
// stays at the event, so the next start meets it again and stops again.
import { afterEach, describe, expect, inject, it } from 'vitest';
import { committedOffsets, createTopic, produce } from './kafkaClient.js';
import { asInput, disputes, scenario } from './disputes.js';
import { Worker, type WorkerOptions } from './worker.js';

const bootstrap = inject('kafkaBootstrap');
const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.kill()));
});

function start(options: WorkerOptions): Worker {
  const worker = new Worker(options);
  workers.push(worker);
  return worker;
}

/** The message of the error the worker stopped on. */
function fatalMessage(worker: Worker): string {
  const line = worker.lines.find((l) => l.msg === 'orderly run: stopped by a fatal error');
  expect(line, worker.tail()).toBeDefined();
  return (line!.err as { message: string }).message;
}

describe("orderly run: onExhausted 'fail' on Kafka", () => {
  it('stops the worker at the poison event, naming the operator and the event, and commits nothing past it', async () => {
    const { prefix, group, stateDir } = await scenario('fail');
    const topic = `${prefix}disputes`;
    // One partition, so that the poison's offset is known: 8 disputes, committed, then the poison
    // (offset 8) and 6 more, of its account and others.
    const inputs = disputes(15, 4, (i) => (i === 8 ? 'unparseable' : 'not-received'));
    const poison = inputs[8]!;
    await createTopic(bootstrap, topic, 1);
    await produce(bootstrap, topic, inputs.slice(0, 8).map(asInput));
    const options: WorkerOptions = { bootstrap, group, stateDir, topicPrefix: prefix, sourceModule: 'test/kafka/disputesFailing.ts' };
    const first = start(options);
    await first.waitFor('offset 8 committed', (lines) => lines.some((l) => l.msg === 'committed' && l.topic === topic && l.offset === 8));
    await produce(bootstrap, topic, inputs.slice(8).map(asInput));

    expect(await first.exit(60_000)).toBe(1);
    const stoppedOn = new RegExp(
      `^agentStep 'decide': decision failed its schema: .*, on ${topic.replace(/\./g, '\\.')}/0@8 \\(key "${poison.account}"\\), after 3 attempt\\(s\\); the park\\(\\) says onExhausted: 'fail'.*choose onExhausted 'park', 'dlq' or 'skip'$`,
    );
    expect(fatalMessage(first)).toMatch(stoppedOn);
    expect(first.errors).toContain(`orderly run: stopped by a fatal error: ${fatalMessage(first)}\n`);
    expect(
      first
        .outcomes()
        .filter((l) => l.offset === 8)
        .map((l) => l.outcome),
    ).toEqual(['RETRY', 'RETRY']);
    expect(await committedOffsets(bootstrap, group, topic, 1)).toEqual([8]);

    // The next start reads from offset 8: the poison stops it again, and nothing before it runs again.
    const second = start(options);
    expect(await second.exit(60_000)).toBe(1);
    expect(fatalMessage(second)).toMatch(stoppedOn);
    expect(second.outcomes().filter((l) => Number(l.offset) < 8)).toEqual([]);
    expect(await committedOffsets(bootstrap, group, topic, 1)).toEqual([8]);
  });
});
