import type { ParkedKeyInfo } from '../src/engine/engine.js';
import type { Resolution } from '../src/engine/parkedKeys.js';
import type { CrashPoint } from './crashPoints.js';
import type { TopologyTestDriver } from './driver.js';

/**
 * A fault: a crash at a virtual time after the previous step, or at the nth time a named point is
 * reached; or, at a virtual time, a rebalance that takes partitions away (`lost`: without a chance
 * to commit, as after a missed session timeout) and gives them back, or a stop as on SIGTERM.
 */
export type ScenarioCrash =
  | { readonly kind: 'at'; readonly delayMs: number; readonly restartAfterMs: number }
  | { readonly kind: 'point'; readonly point: CrashPoint; readonly nth: number; readonly restartAfterMs: number }
  /** `partitions`: a bit mask of the partitions taken (none of those there: the first). */
  | { readonly kind: 'revoke'; readonly delayMs: number; readonly partitions: number; readonly lost: boolean }
  /**
   * The engine is fenced out of its group without being told and a new one takes over after
   * `restartAfterMs`, while the old one runs on until it hears its partitions lost `lostAfterMs`
   * after the fence. Exactly-once only: on at-least-once paths the old one's late writes can apply
   * an event twice, a documented limit the properties exclude by drawing this fault under exactly-once alone.
   */
  | { readonly kind: 'fenced'; readonly delayMs: number; readonly lostAfterMs: number; readonly restartAfterMs: number }
  /**
   * Kafka refuses the changelog records of the nth staged write from now on for good (a record
   * above the topic's max.message.bytes): the engine stops on it, as its worker does, and restarts
   * after `restartAfterMs` (the topic fixed); exactly-once, the transaction fails under it and the
   * partitions whose work it held are reset instead. Not on a plain store (see TopologyTestDriver.refuseWrite).
   */
  | { readonly kind: 'refused'; readonly nth: number; readonly restartAfterMs: number }
  /**
   * The worker is stopped as on SIGTERM (a deploy, a scale-in) at a virtual time: its work in
   * flight runs for `graceMs` and what is left is given up, restores under way are abandoned, the
   * finished prefix is committed; it restarts after `restartAfterMs`.
   */
  | { readonly kind: 'stop'; readonly delayMs: number; readonly graceMs: number; readonly restartAfterMs: number };

/** A crash in the middle of the replays of resolved keys, at the nth replayed event. */
export interface ReplayCrash {
  readonly nth: number;
  readonly restartAfterMs: number;
}

/**
 * Applies one fault to a running driver and runs until idle. `afterCrash` runs while the engine
 * is down (before its restart), for checks of what a restart will find.
 */
export async function applyFault(driver: TopologyTestDriver, partitions: number, crash: ScenarioCrash, afterCrash: () => Promise<void>): Promise<void> {
  if (crash.kind === 'revoke') {
    await driver.advanceWallClockTime(crash.delayMs);
    if (!driver.running) return;
    const taken = [...Array(partitions).keys()].filter((p) => (crash.partitions & (1 << p)) !== 0);
    const chosen = taken.length > 0 ? taken : [0];
    await driver.revoke(chosen, { lost: crash.lost });
    await driver.assign(chosen);
    return;
  }
  if (crash.kind === 'fenced') {
    await driver.advanceWallClockTime(crash.delayMs);
    if (!driver.running) return;
    driver.fence({ lostAfterMs: crash.lostAfterMs });
    driver.restart({ after: crash.restartAfterMs });
    await driver.runUntilIdle();
    return;
  }
  if (crash.kind === 'stop') {
    await driver.advanceWallClockTime(crash.delayMs);
    if (!driver.running) return;
    await driver.stop({ graceMs: crash.graceMs });
    return restartAfter(driver, crash.restartAfterMs, afterCrash);
  }
  if (crash.kind === 'at') driver.crash({ at: driver.now() + crash.delayMs });
  else if (crash.kind === 'refused') driver.refuseWrite({ nth: crash.nth });
  // A point this driver never reaches is no crash (a schedule is drawn before its mode is known).
  else if (driver.canCrashAt(crash.point)) driver.crash({ point: crash.point, nth: crash.nth });
  await driver.runUntilIdle();
  driver.disarm();
  if (!driver.running) await restartAfter(driver, crash.restartAfterMs, afterCrash);
}

/** The engine is down: the checks of what a restart will find, then the restart, run until idle. */
async function restartAfter(driver: TopologyTestDriver, afterMs: number, afterCrash: () => Promise<void>): Promise<void> {
  await afterCrash();
  driver.restart({ after: afterMs });
  await driver.runUntilIdle();
}

/**
 * Resolves parked keys until none is left: `resolutionFor` chooses each key's resolution in turn.
 * With `replayCrash`, the engine crashes at the nth replayed event and restarts; the next round
 * resolves what is left. Throws after 100 rounds (a resolution that parks its key again forever).
 */
export async function resolveAllParked(
  driver: TopologyTestDriver,
  options: {
    readonly resolutionFor: (parked: ParkedKeyInfo, turn: number) => Resolution;
    readonly replayCrash?: ReplayCrash;
    readonly afterCrash: () => Promise<void>;
    readonly caller: string;
  },
): Promise<void> {
  if (options.replayCrash) driver.crash({ point: 'replaying', nth: options.replayCrash.nth });
  let turn = 0;
  for (let round = 0; round < 100; round++) {
    if (!driver.running) {
      await options.afterCrash();
      driver.restart({ after: options.replayCrash?.restartAfterMs ?? 0 });
      await driver.runUntilIdle();
    }
    const parked = driver.parked().filter((p) => p.status === 'parked');
    if (parked.length === 0 && driver.parked().length === 0) {
      driver.disarm();
      return;
    }
    for (const p of parked) {
      if (!driver.running) break;
      try {
        await driver.resolve(p.partition, p.lane, options.resolutionFor(p, turn++));
      } catch (error) {
        // A crash mid-replay interrupts the call; the next round restarts and resolves what is left.
        if (driver.running) throw error;
      }
    }
    await driver.runUntilIdle();
  }
  const left = driver.parked().filter((p) => p.status === 'parked');
  const named = left.slice(0, 3).map((p) => {
    const head = driver.parkedHead(p.partition, p.lane);
    const last = head.errors[head.errors.length - 1];
    return `key '${p.lane}' of partition ${p.partition}, parked at step '${head.step}' after ${head.attempts} attempts${last ? `, last error: ${last.error}` : ''}`;
  });
  throw new Error(
    `${options.caller}: ${left.length} parked key${left.length === 1 ? ' was' : 's were'} still left after 100 rounds of resolutions: ${named.join('; ')}${left.length > 3 ? `; and ${left.length - 3} more` : ''}. ` +
      'Each round parked them again: a retry whose step fails again, or a decision that what follows the step (the effect, a later step) refuses or throws on. ' +
      'Fix what the last error names, or resolve such keys with a discard',
  );
}
