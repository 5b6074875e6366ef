import type { Clock, Timer } from '../src/ports/clock.js';
import { MinHeap } from '../src/engine/minHeap.js';

interface VirtualTimer {
  readonly dueMs: number;
  readonly callback: () => void;
  readonly background: boolean;
  readonly owner: string;
  cancelled: boolean;
}

/**
 * Virtual time for the test driver: nothing moves until the driver fires the next timer. Each
 * engine instance gets its own view, so a crash cancels exactly that instance's timers.
 */
export class VirtualClock {
  private nowMs = 0;
  private readonly timers = new MinHeap<VirtualTimer>();
  private readonly byOwner = new Map<string, Set<VirtualTimer>>();
  private readonly fenced = new Set<string>();
  // Timers that keep a run alive (not background, not cancelled).
  private live = 0;

  now(): number {
    return this.nowMs;
  }

  /** A Clock for one owner (an engine instance, the driver). */
  view(owner: string): Clock {
    return {
      now: () => this.nowMs,
      setTimer: (delayMs, callback, options) => this.add(owner, delayMs, callback, options?.background ?? false),
    };
  }

  /** Cancels every timer of `owner` and ignores the ones it sets from now on (it has crashed). */
  fence(owner: string): void {
    this.fenced.add(owner);
    for (const timer of this.byOwner.get(owner) ?? []) this.cancel(timer);
    this.byOwner.delete(owner);
  }

  /** The due time of the next timer that keeps the run alive, if any. */
  nextDueMs(): number | undefined {
    this.dropCancelled();
    return this.live > 0 ? this.timers.peek()?.dueMs : undefined;
  }

  /** Fires the earliest timer if it is due by `limitMs`; returns false if none is. */
  fireNext(limitMs = Infinity): boolean {
    this.dropCancelled();
    const next = this.timers.peek();
    if (!next || next.dueMs > limitMs) return false;
    this.timers.pop();
    this.cancel(next);
    this.byOwner.get(next.owner)?.delete(next);
    this.nowMs = Math.max(this.nowMs, next.dueMs);
    next.callback();
    return true;
  }

  /** Moves time forward to `toMs` (the driver fires every timer due before it first). */
  advanceTo(toMs: number): void {
    this.nowMs = Math.max(this.nowMs, toMs);
  }

  private add(owner: string, delayMs: number, callback: () => void, background: boolean): Timer {
    if (!Number.isFinite(delayMs) || delayMs < 0) throw new RangeError(`setTimer: delayMs must be 0 or more, got ${delayMs}`);
    if (this.fenced.has(owner)) return { cancel: () => {} };
    const timer: VirtualTimer = { dueMs: this.nowMs + delayMs, callback, background, owner, cancelled: false };
    this.timers.push(timer, timer.dueMs);
    if (!background) this.live += 1;
    let mine = this.byOwner.get(owner);
    if (!mine) this.byOwner.set(owner, (mine = new Set()));
    mine.add(timer);
    return {
      cancel: () => {
        this.cancel(timer);
        mine.delete(timer);
      },
    };
  }

  private cancel(timer: VirtualTimer): void {
    if (timer.cancelled) return;
    timer.cancelled = true;
    if (!timer.background) this.live -= 1;
  }

  private dropCancelled(): void {
    while (this.timers.peek()?.cancelled) this.timers.pop();
  }
}
