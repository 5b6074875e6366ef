import type { Random } from '../ports/random.js';

/** The Random port on `Math.random()`: for retry jitter, where nothing needs to be replayed. */
export const systemRandom: Random = {
  next: () => Math.random(),
};
