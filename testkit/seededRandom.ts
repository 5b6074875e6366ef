import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import type { Random } from '../src/ports/random.js';

/** A Random port seeded for reproducible runs, with a way to derive an independent source per subsystem. */
export class SeededRandom implements Random {
  private readonly rng;

  constructor(readonly seed: number) {
    this.rng = xoroshiro128plus(seed);
  }

  next(): number {
    return uniformFloat64(this.rng);
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /**
   * A source for one subsystem (the engine, the model, the faults), so that adding draws to one
   * does not change what the others see.
   */
  derive(name: string): SeededRandom {
    let h = this.seed ^ 0x9e3779b9;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
    return new SeededRandom(h | 0);
  }
}
