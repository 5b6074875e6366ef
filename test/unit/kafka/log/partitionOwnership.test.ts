// The ownership of a partition in KafkaLog is a checked state machine: every move in the table
// passes, any other throws naming the partition, both states and the cause.
import { describe, expect, it } from 'vitest';
import { ownershipTransitions, OwnershipTransitionError, transition, type Ownership } from '../../../../src/kafka/log/partitionOwnership.js';

const tp = { topic: 'orders', partition: 3 };
const all = Object.keys(ownershipTransitions) as Ownership[];
const allowed = all.flatMap((from) => ownershipTransitions[from].map((to) => [from, to] as const));
const forbidden = all.flatMap((from) => all.filter((to) => !ownershipTransitions[from].includes(to)).map((to) => [from, to] as const));

describe('partition ownership', () => {
  it('names the four states and the moves of the lifecycle', () => {
    expect(all.sort()).toEqual(['assigning', 'lost', 'owned', 'revoking']);
    expect(allowed).toContainEqual(['assigning', 'owned']);
    expect(allowed).toContainEqual(['owned', 'revoking']);
    expect(allowed).toContainEqual(['owned', 'lost']);
    expect(forbidden).toContainEqual(['lost', 'owned']);
  });

  it.each(allowed)('allows %s → %s', (from, to) => {
    expect(transition(tp, from, to, 'a test')).toBe(to);
  });

  it.each(forbidden)('refuses %s → %s, naming the partition, both states and the cause', (from, to) => {
    let thrown: unknown;
    try {
      transition(tp, from, to, 'revoked by the group');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OwnershipTransitionError);
    const message = (thrown as Error).message;
    expect(message).toContain('orders/3');
    expect(message).toContain(`from ${from} to ${to}`);
    expect(message).toContain('revoked by the group');
  });

  it('lets a lost partition go nowhere: its offsets can no longer be committed', () => {
    expect(ownershipTransitions.lost).toEqual([]);
  });
});
