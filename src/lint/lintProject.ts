import { Node, SyntaxKind, type CallExpression, type NewExpression, type SourceFile } from 'ts-morph';
import { placeOf, type Place } from '../static/place.js';
import type { LoadedProject } from '../static/project.js';
import { callsOf } from '../static/topologySites.js';
import { allowFor } from './allowComments.js';
import { calleeDeclaration, forbiddenForDecide, modelCall, type Reached } from './callTargets.js';
import { functionDeclarationOf, walkCallGraph, type ChainLink } from './callGraph.js';
import { contextMisuse } from './contextUse.js';
import { outsideStateWrite } from './outsideState.js';
import { unboundMethodUsingThis } from './unboundMethod.js';
import { rules, type RuleId } from './rules.js';

/** One finding: the rule, where, and the chain of calls from the decide function (or effect) to it. */
export interface Finding extends Place {
  readonly rule: RuleId;
  readonly message: string;
  /** The agent step or effect whose code reaches it, e.g. `agentStep 'decide'`. */
  readonly from: string;
  /** From the decide function (or effect) to the offending call, each with where it is called. */
  readonly chain: ReadonlyArray<Place & { readonly name: string }>;
}

/** The findings, and every decide function and effect that was checked. */
export interface LintResult {
  readonly findings: Finding[];
  readonly checked: ReadonlyArray<Place & { readonly name: string }>;
}

interface Root {
  readonly kind: 'decide' | 'effect';
  /** An agent step's decide function: a model call, which an effect must not call. */
  readonly asksModel?: boolean;
  readonly label: string;
  readonly node: Node;
  readonly at: Node;
  /** Also walked for it: the arguments of the factory call that made it (a decide function wrapped by a helper of the project). */
  readonly also?: readonly Node[];
}

/**
 * Checks every decide function (an agent step's, a route's rule, a fallback's or a shadow's
 * handler) and every effect of the target files through their
 * call graphs inside the project. Findings suppressed by an `orderly-allow` comment with a reason
 * are left out; one without a reason is itself a finding.
 */
export function lintProject(loaded: LoadedProject, cwd: string): LintResult {
  const place = (node: Node): Place => placeOf(node, cwd);
  const roots = findRoots(loaded);
  const decideBodies = new Set(roots.filter((r) => r.asksModel).map((r) => r.node));
  const findings = new Map<string, Finding>();
  for (const root of roots) {
    const unbound = unboundMethodUsingThis(root.node);
    if (unbound) {
      const at = place(root.node);
      const finding: Finding = {
        rule: 'unbound-method',
        ...at,
        message: `${unbound}: ${rules['unbound-method']}`,
        from: root.label,
        chain: [{ name: root.label, ...at }],
      };
      const kept = applyAllow(finding, root.node.getSourceFile());
      if (kept) findings.set(`${kept.rule}|${kept.file}:${kept.line}|${root.node.getStart()}|${root.label}`, kept);
    }
    for (const start of [root.node, ...(root.also ?? [])]) {
      walkCallGraph(start, { name: root.label, at: start === root.node ? root.at : start }, (node, chain, onPath, thisOutlives) => {
        const reached = check(root, node, decideBodies, onPath, thisOutlives);
        if (!reached) return;
        const offending = { ...place(node), name: reached.what };
        const finding: Finding = {
          rule: reached.rule,
          ...place(node),
          message: `${reached.what}: ${rules[reached.rule]}`,
          from: root.label,
          chain: [...chain.map((link: ChainLink) => ({ name: link.name, ...place(link.at) })), offending],
        };
        const kept = applyAllow(finding, node.getSourceFile());
        if (kept) findings.set(`${kept.rule}|${kept.file}:${kept.line}|${node.getStart()}|${root.label}`, kept);
      });
    }
  }
  const byPlace = (a: Place, b: Place): number => a.file.localeCompare(b.file) || a.line - b.line;
  return {
    findings: [...findings.values()].sort((a, b) => byPlace(a, b) || a.rule.localeCompare(b.rule)),
    checked: roots.map((root) => ({ name: root.label, ...place(root.node) })).sort(byPlace),
  };
}

function check(root: Root, node: Node, decideBodies: ReadonlySet<Node>, onPath: ReadonlySet<Node>, thisOutlives: boolean): Reached | undefined {
  if (root.kind === 'decide') {
    const misuse = contextMisuse(node);
    if (misuse) return { rule: 'decide-context', what: misuse };
    const forbidden = isCall(node) ? forbiddenForDecide(node, calleeDeclaration(node)) : undefined;
    return forbidden ?? outsideState(node, onPath, thisOutlives);
  }
  const called = isCall(node) ? modelCall(node, calleeDeclaration(node)) : undefined;
  if (called) return called;
  const kept = outsideState(node, onPath, thisOutlives);
  if (kept) return kept;
  // Calling (or passing on) a function that is an agent step's decide function is a model call.
  const target = Node.isIdentifier(node) ? functionDeclarationOf(node) : undefined;
  if (target && decideBodies.has(target.body)) return { rule: 'effect-no-model-call', what: `${node.getText()}, an agent step's decide function` };
  return undefined;
}

function outsideState(node: Node, onPath: ReadonlySet<Node>, thisOutlives: boolean): Reached | undefined {
  const what = outsideStateWrite(node, onPath, thisOutlives);
  return what ? { rule: 'state-outside-store', what } : undefined;
}

function isCall(node: Node): node is CallExpression | NewExpression {
  return Node.isCallExpression(node) || Node.isNewExpression(node);
}

/** The finding, unless an allow comment with a reason suppresses it; an allow without a reason is a finding itself. */
function applyAllow(finding: Finding, file: SourceFile): Finding | undefined {
  const allow = allowFor(file, finding.line);
  if (!allow || allow.rule !== finding.rule) return finding;
  if (allow.reason.length > 0) return undefined;
  return { ...finding, rule: 'allow-needs-reason', message: `orderly-allow: ${allow.rule} has no reason: ${rules['allow-needs-reason']}` };
}

/**
 * The builder methods whose second argument decides for an agent step, each held to a decide
 * function's rules: the step's decide function, a route's rule, a fallback's and a shadow's handler.
 */
const DECIDERS = new Set(['agentStep', 'route', 'fallback', 'shadow']);

/** A file that mentions none of these declares no decide function or effect: it is not parsed for them. */
const MENTIONS = [...DECIDERS, 'effect', 'applyOnce'];

/** Every decide function (of an agent step, a route, a fallback, a shadow) and every effect's apply function in the target files. */
function findRoots(loaded: LoadedProject): Root[] {
  const roots: Root[] = [];
  const seen = new Set<Node>();
  const add = (root: Root): void => {
    if (seen.has(root.node)) return;
    seen.add(root.node);
    roots.push(root);
  };
  for (const file of loaded.targets) {
    const text = file.getFullText();
    if (!MENTIONS.some((word) => text.includes(word))) continue;
    for (const call of file.getDescendantsOfKind(SyntaxKind.CallExpression)) {
      const callee = call.getExpression();
      const args = call.getArguments();
      if (Node.isPropertyAccessExpression(callee) && isBuilder(callee.getExpression())) {
        if (DECIDERS.has(callee.getName()) && args[1]) {
          const label = `${callee.getName()} ${args[0]?.getText() ?? ''}`;
          const asksModel = callee.getName() === 'agentStep';
          const also = factoryArguments(args[1]);
          for (const decide of resolveFunctions(args[1])) add({ kind: 'decide', label, node: decide, at: decide, asksModel, also });
        }
        if (callee.getName() === 'applyOnce' && args[0]) {
          for (const made of resolveFunctions(args[0])) if (Node.isCallExpression(made)) addEffect(made, loaded, add);
        }
      } else {
        addEffect(call, loaded, add);
      }
    }
  }
  return roots;
}

function addEffect(call: CallExpression, loaded: LoadedProject, add: (root: Root) => void): void {
  const declaration = calleeDeclaration(call);
  const apply = call.getArguments()[1];
  if (!declaration || !apply || loaded.view.dslFunctionOf(declaration) !== 'effect') return;
  for (const fn of resolveFunctions(apply)) add({ kind: 'effect', label: `effect ${call.getArguments()[0]?.getText() ?? ''}`, node: fn, at: fn });
}

function isBuilder(node: Node): boolean {
  return node.getType().getSymbol()?.getName() === 'StreamBuilder';
}

/**
 * What an argument names: a function's declaration, a variable's initializer, followed through
 * imports; a parameter, followed to the arguments of every call of its function in the project;
 * a call of a project function (a factory), followed to what that function returns.
 */
function resolveFunctions(node: Node, depth = 0): Node[] {
  if (depth > 8) return [node];
  if (Node.isCallExpression(node)) {
    const made = returnedBy(node);
    return made.length > 0 ? made.flatMap((returned) => resolveFunctions(returned, depth + 1)) : [node];
  }
  if (!Node.isIdentifier(node)) return [node];
  let symbol = node.getSymbol();
  if (symbol?.isAlias()) symbol = symbol.getAliasedSymbol() ?? symbol;
  const declaration = symbol?.getValueDeclaration();
  if (!declaration || declaration.getSourceFile().isDeclarationFile()) return [node];
  if (Node.isFunctionDeclaration(declaration)) return [declaration];
  if (Node.isVariableDeclaration(declaration)) {
    const initializer = declaration.getInitializer();
    return initializer ? resolveFunctions(initializer, depth + 1) : [node];
  }
  if (Node.isParameterDeclaration(declaration)) {
    const fn = declaration.getParentOrThrow();
    const index = (fn as unknown as { getParameters(): Node[] }).getParameters().indexOf(declaration);
    const args = callsOf(fn).flatMap((call) => call.getArguments()[index] ?? []);
    return args.length > 0 ? args.flatMap((arg) => resolveFunctions(arg, depth + 1)) : [node];
  }
  return [node];
}

/** The arguments of a call of a project function that makes the decide function (what it wraps), else none. */
function factoryArguments(node: Node): Node[] {
  return Node.isCallExpression(node) && returnedBy(node).length > 0 ? node.getArguments() : [];
}

/** What a call of a project function returns (its return statements' expressions, an arrow's expression body); none for any other call. */
function returnedBy(call: CallExpression): Node[] {
  const callee = call.getExpression();
  const target = Node.isIdentifier(callee) ? functionDeclarationOf(callee) : undefined;
  if (!target) return [];
  const body = target.body;
  if (Node.isArrowFunction(body) && !Node.isBlock(body.getBody())) return [body.getBody()];
  const returns: Node[] = [];
  body.forEachDescendant((node, traversal) => {
    // A nested function's returns are its own.
    if (Node.isFunctionLikeDeclaration(node) || Node.isArrowFunction(node) || Node.isFunctionExpression(node)) {
      traversal.skip();
      return;
    }
    if (Node.isReturnStatement(node)) {
      const expression = node.getExpression();
      if (expression) returns.push(expression);
    }
  });
  return returns;
}
