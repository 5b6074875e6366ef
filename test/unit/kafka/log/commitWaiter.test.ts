import { describe, expect, it } from 'vitest';
import { CommitWaiter, isRefusedByRebalance, isRetriableCommitError } from '../../../../src/kafka/log/commitWaiter.js';

const offsets = [{ topic: 't', partition: 0, offset: 5 }];

/** A commit that librdkafka answers with `code` (0: success), through offset_commit_cb. */
async function commitAnswered(code: number): Promise<unknown> {
  const waiter = new CommitWaiter();
  const done = waiter.commit({ commit: () => undefined }, offsets);
  waiter.settled(code === 0 ? undefined : ({ code, message: `code ${code}` } as never), offsets);
  return done.then(
    () => 'committed',
    (error: unknown) => error,
  );
}

describe('commit errors', () => {
  it('a rebalance that took the partitions (or emptied the group of its last member) refuses the commit (not fatal, not retried)', async () => {
    for (const code of [22, 25, 27, 69, -142, 110, 113]) {
      const error = await commitAnswered(code);
      expect(isRefusedByRebalance(error), `code ${code}`).toBe(true);
      expect(isRetriableCommitError(error), `code ${code}`).toBe(false);
    }
  });

  it('a commit without an assignment (ERR__STATE, thrown at once by librdkafka) is refused too', async () => {
    const waiter = new CommitWaiter();
    const error = await waiter
      .commit(
        {
          commit: () => {
            throw Object.assign(new Error('Local: Erroneous state'), { code: -172 });
          },
        },
        offsets,
      )
      .catch((e: unknown) => e);
    expect(isRefusedByRebalance(error)).toBe(true);
  });

  it('a moving coordinator or a timeout is retried; anything else is fatal; nothing to commit is success', async () => {
    for (const code of [-195, -185, 14, 15, 16]) {
      const error = await commitAnswered(code);
      expect(isRetriableCommitError(error), `code ${code}`).toBe(true);
      expect(isRefusedByRebalance(error), `code ${code}`).toBe(false);
    }
    const denied = await commitAnswered(30); // GROUP_AUTHORIZATION_FAILED
    expect(isRetriableCommitError(denied) || isRefusedByRebalance(denied)).toBe(false);
    expect(await commitAnswered(-168)).toBe('committed');
    expect(await commitAnswered(0)).toBe('committed');
  });
});
