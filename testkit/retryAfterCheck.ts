import type { ObservedModelCall } from './driverObservations.js';
import type { ModelStats } from './fakeModel.js';
import type { InvariantViolation } from './violations.js';

/**
 * No call of the step starts before the Retry-After of a 429 its engine instance received has
 * passed. Per instance: a restarted engine is a new client, which knows nothing of the last one's
 * refusals. `observed` (the driver's view, with instances) and `model` (the provider's view, with
 * the windows' ends) list the same calls in the same order: the engine tells its observer of a
 * call just before it calls the step.
 *
 * A 429 thrown synchronously binds the calls that start from the next virtual millisecond on: the
 * gate may have admitted several calls at one instant, which then start one after another in
 * that instant, the first one's synchronous 429 coming before the next one starts.
 */
export function checkRetryAfter(observed: readonly ObservedModelCall[], model: ModelStats): InvariantViolation[] {
  const calls = model.calls;
  if (calls.length !== observed.length || calls.some((c, i) => c.effectId !== observed[i]!.effectId)) {
    return [
      {
        invariant: 'retry-after-ignored',
        detail: `the harness could not pair the model's ${calls.length} calls with the engines' ${observed.length}: is another caller using this model, or does the topology builder give the step a decide other than decide('<its name>')?`,
      },
    ];
  }
  // Starts and refusals delivered, in the order they happened.
  const moments = [
    ...calls.map((c, i) => ({ seq: c.seq, call: i, refusal: undefined as { untilMs: number; fromMs: number } | undefined })),
    ...model.refusals.map((r) => ({ seq: r.seq, call: r.call, refusal: { untilMs: r.untilMs, fromMs: r.sync ? r.atMs + 1 : r.atMs } })),
  ];
  moments.sort((a, b) => a.seq - b.seq);
  const blockedUntil = new Map<number, { untilMs: number; fromMs: number; call: number }>();
  const found: InvariantViolation[] = [];
  for (const m of moments) {
    const instance = observed[m.call]!.instance;
    if (m.refusal !== undefined) {
      if ((blockedUntil.get(instance)?.untilMs ?? -Infinity) < m.refusal.untilMs) blockedUntil.set(instance, { ...m.refusal, call: m.call });
      continue;
    }
    const blocked = blockedUntil.get(instance);
    const call = calls[m.call]!;
    if (blocked && call.atMs >= blocked.fromMs && call.atMs < blocked.untilMs) {
      found.push({
        invariant: 'retry-after-ignored',
        detail: `engine ${instance} called the step for ${call.effectId} at ${call.atMs} ms, before the Retry-After of the 429 to ${calls[blocked.call]!.effectId} had passed (at ${blocked.untilMs} ms)`,
      });
    }
  }
  return found;
}
