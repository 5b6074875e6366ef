/**
 * Who made the decision an agent step passed on: `agent` (its decide), `rule` (deterministic code:
 * a route's rule, or the handler a shadow applies), `fallback` (a fallback's handler while the
 * step's circuit was open), `person` (the resolution of its parked key).
 */
export type DecidedBy = 'agent' | 'rule' | 'fallback' | 'person';
