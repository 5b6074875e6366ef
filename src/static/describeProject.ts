import { Node, type SourceFile } from 'ts-morph';
import { TopologyError } from '../dsl/topologyError.js';
import { Topology } from '../dsl/topology.js';
import { describeTopology } from '../graph/describe.js';
import { topologyToMermaid } from '../graph/mermaid.js';
import { NotStatic } from './dslCalls.js';
import { Evaluator } from './evaluator.js';
import { bindParameters, invokeFunction } from './invoke.js';
import { placeOf, type Place } from './place.js';
import { Placeholders, type PlaceholderEntry } from './placeholders.js';
import type { LoadedProject } from './project.js';
import { callsOf, enclosingFunction, nameOf, topologySites, type TopologySite } from './topologySites.js';
import { FunctionValue, Scope, Unknown } from './values.js';

/** A value of a topology known only at run time, shown as `marker` in its description. */
export interface UnknownValue extends Place {
  readonly marker: string;
  /** The expression that cannot be known statically. */
  readonly expression: string;
  readonly reason: string;
  /** The environment variable it reads, if any. */
  readonly env?: string;
  /** Where the DSL is given it: the operator and its option. */
  readonly uses: ReadonlyArray<Place & { readonly operator: string; readonly option: string }>;
}

/** One topology read from code. */
export interface StaticTopology extends Place {
  readonly name: string;
  /** What `describe()` prints at run time, with a marker for each unknown value; null when it could not be read. */
  readonly description: string | null;
  readonly mermaid: string | null;
  readonly unknowns: readonly UnknownValue[];
  /** Why the topology could not be read (the DSL refuses the chain, or its shape is known only at run time). */
  readonly error?: string;
}

/**
 * Finds every topology declared in the project's target files and reads it without running the
 * program: one per `.build()`, or, when the chain is built in a function with parameters, one per
 * call of that function in the project.
 */
export function describeProject(loaded: LoadedProject, cwd: string): StaticTopology[] {
  const place = (node: Node): Place => placeOf(node, cwd);
  const topologies: StaticTopology[] = [];
  for (const file of loaded.targets) {
    for (const site of topologySites(file)) {
      for (const instance of instancesOf(site)) {
        const evaluator = new Evaluator(new Placeholders(), loaded.view);
        const evaluate = (): unknown => evaluator.evaluate(site.build, scopeFor(evaluator, site, instance.call));
        topologies.push({ ...place(instance.at), name: instance.name, ...read(evaluator, evaluate, place) });
      }
    }
    const imported = defaultExport(loaded, file, place);
    if (imported) topologies.push(imported);
  }
  return topologies;
}

/**
 * The topology a file's `export default` evaluates to (the module `orderly run` takes), when its
 * chain is built in a file not described itself: `export default build()`, `build` imported.
 */
function defaultExport(loaded: LoadedProject, file: SourceFile, place: (node: Node) => Place): StaticTopology | undefined {
  const assignment = file.getExportAssignment((a) => !a.isExportEquals());
  if (!assignment) return undefined;
  const expression = assignment.getExpression();
  const evaluator = new Evaluator(new Placeholders(), loaded.view);
  const evaluate = (): unknown => {
    const value = evaluator.evaluate(expression, evaluator.moduleScope);
    // `orderly run` also takes a function that returns the topology: it calls it without arguments.
    return value instanceof FunctionValue ? invokeFunction(evaluator, value, [], expression) : value;
  };
  const row = read(evaluator, evaluate, place);
  // No chain reached, or one described where it is built: not a topology of its own.
  if (evaluator.builds.length === 0 || evaluator.builds.some((build) => loaded.targets.includes(build.getSourceFile()))) return undefined;
  return { ...place(assignment), name: 'default', ...row };
}

interface Instance {
  readonly at: Node;
  readonly name: string;
  /** The call that gives the enclosing function its arguments, if any. */
  readonly call?: Node & { getArguments(): Node[] };
}

function instancesOf(site: TopologySite): Instance[] {
  const fn = site.enclosing;
  const own: Instance = { at: site.build, name: nameOf(fn ?? site.build) };
  if (!fn || !hasParameters(fn) || enclosingFunction(fn)) return [own];
  const calls = callsOf(fn);
  return calls.length === 0 ? [own] : calls.map((call) => ({ at: call, name: nameOf(call), call }));
}

function hasParameters(fn: Node): boolean {
  return (fn as unknown as { getParameters?(): Node[] }).getParameters?.().length !== 0;
}

function read(evaluator: Evaluator, evaluate: () => unknown, place: (node: Node) => Place): Omit<StaticTopology, 'file' | 'line' | 'name'> {
  const failed = (error: string): Omit<StaticTopology, 'file' | 'line' | 'name'> => {
    // A DSL message may quote a value known only at run time: show it as its marker, listed.
    const { message, unknowns } = evaluator.placeholders.revealMessage(error);
    return { description: null, mermaid: null, unknowns: unknowns.map((u) => unknownValue(u, place)), error: message };
  };
  try {
    const value = evaluate();
    if (!(value instanceof Topology)) {
      const why = value instanceof Unknown ? `${value.origin.expression} (${at(place(value.origin.node))}): ${value.origin.reason}` : 'it is not a Topology';
      return failed(`the chain cannot be read statically: ${why}`);
    }
    const { nodes, unknowns } = evaluator.placeholders.reveal(value.nodes);
    return { description: describeTopology(nodes), mermaid: topologyToMermaid(nodes), unknowns: unknowns.map((u) => unknownValue(u, place)) };
  } catch (error) {
    if (error instanceof TopologyError) return failed(`the DSL refuses the chain: ${error.message}`);
    if (error instanceof NotStatic) return failed(`${error.message} (${at(place(error.node))})`);
    // One chain the evaluator trips over must not hide the others.
    return failed(`orderly describe could not read the chain: ${(error as Error).message}`);
  }
}

/** The scopes of the functions around the chain: the call's arguments bound, other parameters unknown. */
function scopeFor(evaluator: Evaluator, site: TopologySite, call: Instance['call']): Scope {
  if (!call || !site.enclosing) return scopeAround(evaluator, site.build);
  const args = call.getArguments().map((arg) => evaluator.evaluate(arg as never, scopeAround(evaluator, call)));
  const scope = new Scope(evaluator.moduleScope, site.enclosing);
  bindParameters(evaluator, (site.enclosing as unknown as { getParameters(): Node[] }).getParameters(), args, scope);
  return scope;
}

/**
 * A scope for each function around `node`, outermost first, as if called without arguments: a
 * parameter with a default has it, the others are unbound (so unknown).
 */
function scopeAround(evaluator: Evaluator, node: Node): Scope {
  const functions: Node[] = [];
  for (let fn = enclosingFunction(node); fn; fn = enclosingFunction(fn)) functions.unshift(fn);
  return functions.reduce((outer, fn) => {
    const scope = new Scope(outer, fn);
    const parameters = (fn as unknown as { getParameters?(): Node[] }).getParameters?.() ?? [];
    for (const parameter of parameters) {
      if (Node.isParameterDeclaration(parameter) && parameter.hasInitializer()) bindParameters(evaluator, [parameter], [], scope);
    }
    return scope;
  }, evaluator.moduleScope);
}

function unknownValue(entry: PlaceholderEntry, place: (node: Node) => Place): UnknownValue {
  const { origin } = entry;
  return {
    marker: entry.marker,
    expression: origin.expression,
    ...place(origin.node),
    reason: origin.reason,
    ...(origin.env === undefined ? {} : { env: origin.env }),
    uses: entry.uses.map((use) => ({ operator: use.operator, option: use.option, ...place(use.node) })),
  };
}

function at(p: Place): string {
  return `${p.file}:${p.line}`;
}
