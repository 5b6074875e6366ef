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
    | 'state-mismatch';
  readonly detail: string;
}
