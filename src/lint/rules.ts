/** The rules of `orderly lint`, by id. docs/lint.md explains each. */
export const rules = {
  'decide-no-kafka-client':
    'a decide function reaches a Kafka client: the engine owns the consumer and producer; return a decision, let applyOnce and to() write',
  'decide-no-commit-or-produce':
    'a decide function reaches a commit or produce API: only the engine commits, and outputs go through applyOnce and to(), once per event',
  'decide-no-state-store': "a decide function reaches a state store: state is written by applyOnce's effect, atomically with its effect id",
  'decide-no-process-exit': 'a decide function reaches process.exit: throw instead, and the engine counts a failed attempt or parks the event',
  'decide-context':
    'a decide function uses its context other than as documented (DecideContext): reads a member it does not declare, writes to it, or keeps it beyond the call',
  'effect-no-model-call': 'an effect reaches a model call: a retried effect would call the model again; decide in the agent step, apply in the effect',
  'state-outside-store':
    "a decide function or effect writes a variable or an instance's field that outlives the call: it is lost at a restart, stays behind when its partition moves to another worker, and is written again when the event is retried or redelivered; keep state in the effect's state table (ctx.state) or in the decision",
  'unbound-method':
    'a method given to the builder unbound uses this: orderly calls every function it is given alone (this undefined), so it fails at every call; pass obj.method.bind(obj), or an arrow (value, ctx) => obj.method(value, ctx)',
  'allow-needs-reason': 'an orderly-allow comment without a reason: write `// orderly-allow: <rule> <reason>`',
} as const;

export type RuleId = keyof typeof rules;

export function isRuleId(id: string): id is RuleId {
  return Object.hasOwn(rules, id);
}
