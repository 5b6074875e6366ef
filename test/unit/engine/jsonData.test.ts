import { describe, expect, it } from 'vitest';
import { jsonProblem } from '../../../src/engine/jsonData.js';

describe('jsonProblem: what a durable step may return', () => {
  it('takes JSON data, undefined at the top and undefined properties (JSON leaves them out)', () => {
    for (const value of [
      undefined,
      null,
      0,
      -1.5,
      '',
      'x',
      true,
      [],
      [1, 'a', null, [{}]],
      { a: { b: [1] }, gone: undefined },
      Object.create(null) as object,
    ]) {
      expect(jsonProblem(value, 'result')).toBeUndefined();
    }
  });

  it('names where in the value JSON would not read it back as it is', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const shared = { n: 1 };
    expect(jsonProblem({ at: new Date(0) }, 'result')).toBe('result.at is a Date, not a plain object (JSON would not read it back as it is)');
    expect(jsonProblem(new Map(), 'result')).toMatch(/^result is a Map/);
    expect(jsonProblem([1, Infinity], 'result')).toBe('result[1] is Infinity, which JSON cannot hold (it would read back as null)');
    expect(jsonProblem({ n: 1n }, 'result')).toBe('result.n is a bigint, which JSON cannot hold');
    expect(jsonProblem({ f: () => 1 }, 'result')).toBe('result.f is a function, which JSON cannot hold');
    expect(jsonProblem([[undefined]], 'result')).toBe('result[0][0] is undefined, which JSON turns into null');
    expect(jsonProblem(cycle, 'result')).toBe('result.self refers to an object that holds it (a cycle)');
    // The same object twice, not inside itself, is no cycle.
    expect(jsonProblem({ a: shared, b: shared }, 'result')).toBeUndefined();
  });
});
