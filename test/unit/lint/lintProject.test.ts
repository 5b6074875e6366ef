import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lintProject, type LintResult } from '../../../src/lint/lintProject.js';
import { rules } from '../../../src/lint/rules.js';
import { loadProject } from '../../../src/static/project.js';

const root = resolve(import.meta.dirname, '../../..');
const fixtures = 'test/fixtures/lint';

// Opening a project costs seconds: each input is linted once.
const results = new Map<string, LintResult>();
function run(input: string): LintResult {
  if (!results.has(input)) results.set(input, lintProject(loadProject([input], root), root));
  return results.get(input)!;
}

function lint(input: string) {
  return run(input).findings;
}

function checked(input: string): string[] {
  return run(input).checked.map((c) => `${c.name} ${c.file}:${c.line}`);
}

/** The line of `file` (from the root) where `text` first occurs: code outside the fixtures may move. */
function lineOf(file: string, text: string): number {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const index = lines.findIndex((line) => line.includes(text));
  if (index < 0) throw new Error(`${file}: no line holds ${JSON.stringify(text)}`);
  return index + 1;
}

// Each case opens a TypeScript project (the compiler parses and binds it): seconds, more on a busy machine.
describe('orderly lint', { timeout: 180_000 }, () => {
  it("finds nothing in a clean project: a decide that calls a model through a helper, a context used as documented, state made by each call (in an instance made by the call too, or reached through a local alias of one), clients made on first use, methods given bound (in the constructor, a base class's constructor or a field) or not using this, a getter returning an arrow, an object literal's arrow, an effect that applies a shadow handler", () => {
    expect(lint(`${fixtures}/clean`)).toEqual([]);
    expect(checked(`${fixtures}/clean`)).toEqual([
      `agentStep 'counted' ${fixtures}/clean/aliases.ts:13`,
      `agentStep 'length' ${fixtures}/clean/instances.ts:49`,
      `agentStep 'rules' ${fixtures}/clean/instances.ts:78`,
      `agentStep 'bound' ${fixtures}/clean/instances.ts:79`,
      `agentStep name ${fixtures}/clean/instances.ts:80`,
      `shadow 'legacy' ${fixtures}/clean/lazy.ts:14`,
      `agentStep 'urgency' ${fixtures}/clean/lazy.ts:18`,
      `effect 'urgency' ${fixtures}/clean/lazy.ts:34`,
      `agentStep 'labels' ${fixtures}/clean/locals.ts:17`,
      `effect 'ticket-labels' ${fixtures}/clean/locals.ts:25`,
      `agentStep 'scored' ${fixtures}/clean/methods.ts:51`,
      `agentStep 'strict' ${fixtures}/clean/methods.ts:52`,
      `agentStep 'graded' ${fixtures}/clean/methods.ts:53`,
      `agentStep 'picked' ${fixtures}/clean/methods.ts:56`,
      `effect 'journal' ${fixtures}/clean/methods.ts:58`,
      `agentStep 'route' ${fixtures}/clean/topology.ts:5`,
      `effect 'ticket-routes' ${fixtures}/clean/topology.ts:13`,
    ]);
  });

  it('finds nothing in examples/, having checked their decide functions and effects', () => {
    expect(lint('examples')).toEqual([]);
    expect(checked('examples')).toEqual([
      // The step's decide is made by a factory, answer(latencyMs): the lint checks the function it returns.
      `agentStep 'answer' examples/agent-gateway/topology.ts:${lineOf('examples/agent-gateway/topology.ts', 'return async (request: RequestBody')}`,
      `effect 'agent-answers' examples/agent-gateway/topology.ts:${lineOf('examples/agent-gateway/topology.ts', "effect('agent-answers'")}`,
      // The step's decide is a parameter of disputesWith, given disputeModel(): the lint checks both functions that factory may return.
      `agentStep 'decide' examples/disputes/model.ts:${lineOf('examples/disputes/model.ts', 'if (url) return (dispute, ctx)')}`,
      `agentStep 'decide' examples/disputes/model.ts:${lineOf('examples/disputes/model.ts', 'return async (dispute, ctx)')}`,
      `effect 'dispute-decisions' testkit/scenarios/disputes.ts:${lineOf('testkit/scenarios/disputes.ts', "effect('dispute-decisions'")}`,
    ]);
  });

  it('tells a write to the decide context from a read', () => {
    const messages = lint(`${fixtures}/violations`)
      .filter((f) => f.file.endsWith('context.ts') && f.line === 9)
      .map((f) => f.message);
    expect(messages).toEqual([
      expect.stringMatching(/^writes '\(ctx as unknown as \{ cache\?: unknown \}\)\.cache': the context is the engine's, read it only/),
    ]);
  });

  it('gives each rule its finding, at the offending line, from the step or effect that reaches it', () => {
    const findings = lint(`${fixtures}/violations`);
    expect(findings.map((f) => `${f.file.replace(`${fixtures}/violations/`, '')}:${f.line} ${f.rule} from ${f.from}`)).toEqual([
      "allowed.ts:8 allow-needs-reason from agentStep 'decide'",
      "commitOrProduce.ts:8 decide-no-commit-or-produce from agentStep 'decide'",
      "context.ts:7 decide-context from agentStep 'decide'",
      "context.ts:8 decide-context from agentStep 'decide'",
      "context.ts:9 decide-context from agentStep 'decide'",
      "deciders.ts:6 decide-no-process-exit from route 'routine'",
      "deciders.ts:18 decide-no-process-exit from shadow 'candidate'",
      "deciders.ts:24 state-outside-store from fallback 'rules'",
      "effectModelCall.ts:8 effect-no-model-call from effect 'summaries'",
      "effectModelCall.ts:18 effect-no-model-call from effect 'second-opinions'",
      "factory.ts:10 decide-no-process-exit from agentStep 'decide-from-factory'",
      // An instance's fields: a method passed to the builder, a method it calls on `this`, a class field's arrow, a module instance's method;
      // from 'given', the same instance given as a parameter to the function that builds the topology, whose closure keeps it.
      "instances.ts:10 state-outside-store from agentStep 'triage'",
      "instances.ts:10 state-outside-store from agentStep 'given'",
      "instances.ts:16 state-outside-store from agentStep 'triage'",
      "instances.ts:16 state-outside-store from agentStep 'given'",
      "instances.ts:21 state-outside-store from effect 'counted-calls'",
      "instances.ts:32 state-outside-store from agentStep 'budgeted'",
      // A set given as a parameter to the same function.
      "instances.ts:49 state-outside-store from agentStep 'given'",
      // A class's static field, written directly and by a static method; a getter of a module's instance.
      "instances.ts:59 state-outside-store from agentStep 'counted'",
      "instances.ts:66 state-outside-store from agentStep 'counted'",
      "instances.ts:73 state-outside-store from agentStep 'counted'",
      // A module's instance whose method is called through a const local alias of it; the method writes its field through an alias too.
      "instances.ts:84 state-outside-store from agentStep 'aliased'",
      "instances.ts:86 state-outside-store from agentStep 'aliased'",
      "kafkaClient.ts:8 decide-no-kafka-client from agentStep 'decide'",
      "outsideState.ts:13 state-outside-store from agentStep 'decide'",
      "outsideState.ts:14 state-outside-store from agentStep 'decide'",
      "outsideState.ts:22 state-outside-store from effect 'counted'",
      "outsideState.ts:23 state-outside-store from effect 'counted'",
      "outsideState.ts:24 state-outside-store from effect 'counted'",
      "processExit.ts:7 decide-no-process-exit from agentStep 'decide'",
      "routes.ts:9 state-outside-store from route 'small'",
      "stateStore.ts:9 decide-no-state-store from agentStep 'decide'",
      // Methods given unbound that use their this: a class's, an object literal's (an effect);
      // function expressions, a class field's and an object literal's (an effect); a method whose constructor binds another.
      "unbound.ts:22 unbound-method from agentStep 'review'",
      "unbound.ts:24 unbound-method from effect 'ledger'",
      "unbound.ts:57 unbound-method from effect 'journal'",
      "unbound.ts:57 unbound-method from agentStep 'audit'",
      "unbound.ts:58 unbound-method from agentStep 'summarise'",
      // Each way of writing, one per line: ??= on a property, destructuring, a loop's head, Object.assign, an optional Map, a Map's subclass.
      ...[14, 15, 16, 17, 18, 19, 20].map((line) => `writes.ts:${line} state-outside-store from agentStep 'decide'`),
      // A factory called inline; a module-level store made by a factory, written through the decide function a wrapper was given.
      "writes.ts:28 state-outside-store from agentStep 'made'",
      "writes.ts:36 state-outside-store from agentStep 'wrapped'",
    ]);
    // Every rule has its fixture.
    expect(new Set(findings.map((f) => f.rule))).toEqual(new Set(Object.keys(rules)));
  });

  it('suppresses a finding with an orderly-allow comment only when it gives a reason', () => {
    const allowed = lint(`${fixtures}/violations/allowed.ts`);
    expect(allowed.map((f) => [f.line, f.rule])).toEqual([[8, 'allow-needs-reason']]);
  });

  it('names the chain of calls through three levels of helpers in three files', () => {
    const [finding, ...others] = lint(`${fixtures}/deep`);
    expect(others).toEqual([]);
    expect(finding!.rule).toBe('decide-no-process-exit');
    expect(finding!.chain.map((link) => `${link.name} ${link.file.replace(`${fixtures}/deep/`, '')}:${link.line}`)).toEqual([
      "agentStep 'decide' topology.ts:6",
      'levelOne topology.ts:6',
      'levelTwo levelOne.ts:4',
      'levelThree levelTwo.ts:3',
      'process.exit levelThree.ts:3',
    ]);
  });
});
