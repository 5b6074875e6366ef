/** A broken guarantee, named as plainly as Jepsen names anomalies. */
export interface InvariantViolation {
  readonly invariant:
    | 'order-violation'
    | 'double-effect'
    | 'wasted-model-call'
    | 'commit-past-unfinished'
    | 'poison-not-parked'
    | 'held-key-not-held'
    | 'lost-event'
    | 'key-not-released'
    | 'commit-stuck'
    | 'retry-after-ignored'
    | 'attempt-unrecorded'
    | 'decision-refused'
    | 'row-shared-by-keys'
    | 'step-run-again'
    | 'state-mismatch'
    | 'state-left-behind'
    | 'output-out-of-order'
    | 'commit-backwards'
    | 'applied-while-parked'
    | 'replay-out-of-order'
    | 'rate-limit-exceeded'
    | 'user-invariant'
    /** The run itself failed (a decide or effect that never ends, keys that could not be resolved): its error, in `detail`. */
    | 'run-failed';
  /** What happened, in words: which key, which offsets, in which order. */
  readonly detail: string;
  /** For a user-level invariant: the name its author gave it. */
  readonly name?: string;
}
