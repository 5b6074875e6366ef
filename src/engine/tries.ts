import type { AttemptsRecord } from './attemptsRecords.js';

/**
 * What one attempt came to: a result, a refusal (a 429: not an attempt) or a failure, which counts.
 * `answered`: the call answered, with a decision its schema refused (the step is up, the decision
 * wrong), rather than throwing or timing out.
 */
export type Try<T> =
  { readonly kind: 'done'; readonly value: T } | { readonly kind: 'refused' } | { readonly kind: 'failed'; readonly error: string; readonly answered?: true };

/**
 * What the attempts came to. `attemptsStored`: an earlier attempt failed, so its record is in the
 * store, to delete with the event's end.
 */
export type Tried<T> = { readonly ok: true; readonly value: T; readonly attemptsStored: boolean } | { readonly ok: false; readonly attempts: AttemptsRecord };
