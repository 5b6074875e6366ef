/** The Random port: the engine's only source of randomness, seeded in the test driver. */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
}
