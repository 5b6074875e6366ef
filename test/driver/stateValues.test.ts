// An effect's state table stores rows as JSON: a value with none (a BigInt, a cycle, a function)
// or a null fails that event's attempt, naming the row, and parks it as any failed attempt; other
// keys go on, and the engine does not stop (it did: the batch that would write the row failed).
import { afterEach, describe, expect, it } from 'vitest';
import { effect } from '../../src/dsl/effect.js';
import { stream } from '../../src/dsl/stream.js';
import { TopologyTestDriver } from '../../testkit/driver.js';
import { readParked } from './helpers.js';

let driver: TopologyTestDriver | undefined;
afterEach(async () => {
  await driver?.close();
  driver = undefined;
});

interface Booking {
  readonly id: string;
  readonly bad?: 'bigint' | 'cycle' | 'function' | 'null';
}

function badRow(kind: NonNullable<Booking['bad']>): unknown {
  if (kind === 'bigint') return { deposit: 10n };
  if (kind === 'function') return () => 'deposit';
  if (kind === 'null') return null;
  const row: Record<string, unknown> = { id: 'r' };
  row.self = row;
  return row;
}

function topology() {
  const tally = effect('tally', ({ event }: { event: Booking }, { state, key }) => {
    state.put(key!, event.bad ? badRow(event.bad) : { last: event.id });
    return { id: event.id };
  });
  return stream<Booking>('bookings')
    .keyedSerial()
    .agentStep('check', () => ({ ok: true }))
    .park({ attempts: 2, retryDelayMs: 100 })
    .applyOnce(tally)
    .to('out')
    .build();
}

describe('state table values', () => {
  it.each([
    ['bigint', "row 'a' cannot be stored: Do not know how to serialize a BigInt; a row is stored as JSON"],
    ['cycle', "row 'a' cannot be stored: Converting circular structure to JSON"],
    ['function', "row 'a' cannot be stored: its value (function) has no JSON form"],
    ['null', "put('a', null); a row holds a JSON value: use del('a') to remove a row"],
  ] as const)('a %s row parks its event with an error naming the row, and another key goes on', async (bad, message) => {
    driver = new TopologyTestDriver(topology());
    const input = driver.createInputTopic<Booking>('bookings');
    input.pipeInput('a', { id: 'a1', bad });
    input.pipeInput('a', { id: 'a2' });
    input.pipeInput('b', { id: 'b1' });
    await driver.runUntilIdle();

    // a1 parked as poison, a2 held behind it.
    expect(readParked(driver, 'bookings.parked').map((p) => [p.key, p.body.reason, p.body.source.offset])).toEqual([
      ['a', 'POISON', 0],
      ['a', 'HELD', 1],
    ]);
    const errors = driver.history().flatMap((h) => (h.outcome === 'RETRY' ? [String(h.error)] : []));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(`applyOnce 'tally' threw: state table 'tally': `);
    expect(errors[0]).toContain(message);
    expect(driver.createOutputTopic<{ id: string }>('out').readValuesToList()).toEqual([{ id: 'b1' }]);
  });

  it('stores what JSON makes of a Date and a Set, and reads it back so after a restart', async () => {
    const seen: unknown[] = [];
    const built = stream<Booking>('bookings')
      .keyedSerial()
      .applyOnce(
        effect('tally', (booking: Booking, { state, key }) => {
          seen.push(state.get(key!));
          state.put(key!, { last: booking.id, when: new Date(0), seen: new Set([1]) });
        }),
      )
      .build();
    driver = new TopologyTestDriver(built);
    const input = driver.createInputTopic<Booking>('bookings');
    input.pipeInput('a', { id: 'a1' });
    await driver.runUntilIdle();
    driver.crash();
    driver.restart();
    input.pipeInput('a', { id: 'a2' });
    await driver.runUntilIdle();
    expect(seen).toEqual([undefined, { last: 'a1', when: '1970-01-01T00:00:00.000Z', seen: {} }]);
  });
});
