/**
 * What an adapter throws for an overloaded provider (HTTP 503, or Anthropic's 529) once it has
 * waited the delay the response asked for: a failed attempt, so the engine retries it after the
 * park's `retryDelayMs` and parks the event after `attempts`. The wait makes each attempt last at
 * least the provider's delay, and calls of other events wait it out too.
 */
export class ProviderOverloaded extends Error {
  constructor(
    readonly provider: string,
    readonly status: number,
    /** How long the adapter waited before failing the attempt. */
    readonly delayMs: number,
    /** The header the delay came from, or `default`. */
    readonly delayFrom: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${provider}: the provider is overloaded (HTTP ${status}); waited ${delayMs} ms (${delayFrom}) and failed this attempt, ` +
        `which the park retries; raise park({ attempts }) or retryDelayMs to ride out longer overloads`,
      options,
    );
    this.name = 'ProviderOverloaded';
  }
}
