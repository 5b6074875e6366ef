import { describe, expect, it } from 'vitest';
import { AdmissionTimes } from '../../../src/engine/admissionTimes.js';

describe('AdmissionTimes', () => {
  it('counts the calls admitted from a time on, before a given call', () => {
    const times = new AdmissionTimes();
    // Calls 0-2 at 100, 3 at 250, 4-7 at 400.
    for (const [index, atMs] of [100, 100, 100, 250, 400, 400, 400, 400].entries()) times.add(atMs, index);
    expect(times.countFrom(0, 6)).toBe(6);
    expect(times.countFrom(100, 6)).toBe(6);
    expect(times.countFrom(101, 6)).toBe(3);
    expect(times.countFrom(400, 6)).toBe(2);
    expect(times.countFrom(400, 4)).toBe(0);
    expect(times.countFrom(401, 6)).toBe(0);
  });

  it('forgets the oldest times past its bound, so that a count can only come out lower', () => {
    const times = new AdmissionTimes();
    for (let i = 0; i < 5_000; i++) times.add(i, i);
    // Times 0..903 are forgotten: counting from 0 counts from the oldest kept time.
    expect(times.countFrom(0, 4_999)).toBe(4_095);
    expect(times.countFrom(4_000, 4_999)).toBe(999);
    times.clear();
    expect(times.countFrom(0, 10)).toBe(0);
  });
});
