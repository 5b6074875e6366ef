// The small topology the stand-in runs decide with: one agent step, a park, an effect.
import { z } from 'zod';
import { effect, json, stream, type DecideContext, type RateLimit, type Topology } from '../../src/index.js';
import type { StandInEvent } from './sdkAdapters.js';

export const Decision = z.object({ id: z.string(), action: z.enum(['approve', 'review']) });
export type Decision = z.infer<typeof Decision>;

/** What the stand-in server's model decides for a prompt (the event as JSON). */
export function decideStandIn(prompt: string): Decision {
  const { id } = JSON.parse(prompt) as StandInEvent;
  return { id, action: Number(id.slice(2)) % 3 === 0 ? 'review' : 'approve' };
}

/** An applied decision, as the topology writes it to `decisions`. */
export interface AppliedDecision {
  readonly event: StandInEvent;
  readonly decision: Decision;
}

/** `requests` → keyedSerial(4) → agentStep('decide', with `limit` if given) → park → applyOnce → `decisions`. */
export function standInTopology(
  decide: (event: StandInEvent, ctx: DecideContext) => Promise<unknown>,
  park: { attempts: number; retryDelayMs: number },
  limit?: RateLimit,
): Topology {
  return stream<StandInEvent>('requests', { value: json<StandInEvent>() })
    .keyedSerial({ maxInFlight: 4 })
    .agentStep('decide', decide, { schema: Decision, ...(limit ? { limit } : {}) })
    .park(park)
    .applyOnce(effect('decisions', ({ event, decision }: AppliedDecision): AppliedDecision => ({ event, decision })))
    .to('decisions', { value: json() })
    .build();
}

/** `n` events over five keys. */
export function standInEvents(n: number): Array<{ key: string; value: StandInEvent }> {
  return Array.from({ length: n }, (_, i) => ({ key: `account-${i % 5}`, value: { id: `e-${i}` } }));
}
