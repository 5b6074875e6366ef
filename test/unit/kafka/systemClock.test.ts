import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { systemClock } from '../../../src/kafka/systemClock.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

it('fires a timer only once now() has reached its due time, even when setTimeout fires early', () => {
  const fired: number[] = [];
  systemClock.setTimer(100, () => fired.push(systemClock.now()));
  // The wall clock falls 5 ms behind the timer's own clock, as Date.now() and Node's monotonic
  // timer clock can differ by a rounding: setTimeout's 100 ms have passed, Date.now()'s have not.
  vi.setSystemTime(1_000_000 - 5);
  vi.advanceTimersByTime(100);
  expect(fired).toEqual([]);
  vi.advanceTimersByTime(5);
  expect(fired).toEqual([1_000_100]);
});

it('fires on time, once, and not after cancel', () => {
  const fired: number[] = [];
  systemClock.setTimer(50, () => fired.push(systemClock.now()));
  const cancelled = systemClock.setTimer(60, () => fired.push(-1));
  cancelled.cancel();
  vi.advanceTimersByTime(1_000);
  expect(fired).toEqual([1_000_050]);
});
