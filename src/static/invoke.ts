import { Node, type Expression, type Statement } from 'ts-morph';
import type { Evaluation } from './evaluation.js';
import { Scope, Unknown, type FunctionValue } from './values.js';

const MAX_DEPTH = 64;

type Completion = { readonly returned: true; readonly value: unknown } | { readonly returned: false };
const goOn: Completion = { returned: false };

/**
 * Calls a function of the project: binds its parameters and runs its body's statements in order
 * (declarations, `if`, `return`, `try`). A branch that only throws is taken as not taken (it guards
 * against bad input); a loop or switch that may return makes the result unknown.
 */
export function invokeFunction(evaluator: Evaluation, fn: FunctionValue, args: readonly unknown[], call: Node): unknown {
  const node = fn.node;
  if (!(Node.isFunctionDeclaration(node) || Node.isArrowFunction(node) || Node.isFunctionExpression(node) || Node.isMethodDeclaration(node))) {
    return evaluator.unknown(call, 'a call of something not a function');
  }
  if (evaluator.depth >= MAX_DEPTH) return evaluator.unknown(call, `calls nested deeper than ${MAX_DEPTH}`);
  if (node.isAsync() || (!Node.isArrowFunction(node) && node.isGenerator())) return evaluator.unknown(call, 'a call of an async function or generator');
  const scope = new Scope(fn.scope, node);
  evaluator.depth++;
  try {
    bindParameters(evaluator, node.getParameters(), args, scope);
    const body = node.getBody();
    if (!body) return evaluator.unknown(call, 'a call of a function without a body');
    if (!Node.isBlock(body)) return evaluator.evaluate(body as Expression, scope);
    const completion = runStatements(evaluator, body.getStatements(), scope);
    return completion.returned ? completion.value : undefined;
  } finally {
    evaluator.depth--;
  }
}

/** Binds a call's arguments to `parameters` in `scope`, defaults and one level of destructuring included. */
export function bindParameters(evaluator: Evaluation, parameters: Node[], args: readonly unknown[], scope: Scope): void {
  parameters.forEach((parameter, i) => {
    if (!Node.isParameterDeclaration(parameter)) return;
    let value = parameter.isRestParameter() ? args.slice(i) : args[i];
    const initializer = parameter.getInitializer();
    if (value === undefined && initializer) value = evaluator.evaluate(initializer, scope);
    const name = parameter.getNameNode();
    if (Node.isObjectBindingPattern(name)) {
      for (const element of name.getElements()) {
        const key = element.getPropertyNameNode()?.getText() ?? element.getName();
        let field = evaluator.member(element, value, key, true);
        const fallback = element.getInitializer();
        if (field === undefined && fallback) field = evaluator.evaluate(fallback, scope);
        scope.set(element, field);
      }
    }
    scope.set(parameter, value);
  });
}

function runStatements(evaluator: Evaluation, statements: readonly Statement[], scope: Scope): Completion {
  for (const statement of statements) {
    const completion = runStatement(evaluator, statement, scope);
    if (completion.returned) return completion;
  }
  return goOn;
}

function runStatement(evaluator: Evaluation, statement: Node, scope: Scope): Completion {
  if (Node.isReturnStatement(statement)) {
    const expression = statement.getExpression();
    return { returned: true, value: expression ? evaluator.evaluate(expression, scope) : undefined };
  }
  if (Node.isVariableStatement(statement)) {
    for (const declaration of statement.getDeclarations()) {
      const initializer = declaration.getInitializer();
      // Names bound by destructuring are read lazily, from the declaration.
      if (Node.isIdentifier(declaration.getNameNode())) scope.set(declaration, initializer ? evaluator.evaluate(initializer, scope) : undefined);
    }
    return goOn;
  }
  if (Node.isIfStatement(statement)) return runIf(evaluator, statement, scope);
  if (Node.isBlock(statement)) return runStatements(evaluator, statement.getStatements(), scope);
  if (Node.isTryStatement(statement)) return runStatements(evaluator, statement.getTryBlock().getStatements(), scope);
  if (Node.isThrowStatement(statement)) return { returned: true, value: evaluator.unknown(statement, `throws: ${statement.getText()}`) };
  if (Node.isExpressionStatement(statement)) return runAssignment(evaluator, statement.getExpression(), scope);
  if (
    Node.isFunctionDeclaration(statement) ||
    Node.isEmptyStatement(statement) ||
    Node.isInterfaceDeclaration(statement) ||
    Node.isTypeAliasDeclaration(statement)
  )
    return goOn;
  if (mayReturn(statement)) return { returned: true, value: evaluator.unknown(statement, `a ${statement.getKindName()} orderly describe does not follow`) };
  return goOn;
}

function runIf(
  evaluator: Evaluation,
  statement: Node & { getExpression(): Expression; getThenStatement(): Statement; getElseStatement(): Statement | undefined },
  scope: Scope,
): Completion {
  const condition = evaluator.known(evaluator.evaluate(statement.getExpression(), scope));
  const then = statement.getThenStatement();
  const otherwise = statement.getElseStatement();
  if (!(condition instanceof Unknown)) {
    const branch = condition ? then : otherwise;
    return branch ? runStatement(evaluator, branch, scope) : goOn;
  }
  // `if (bad) throw ...; else ...` guards against bad input: follow the branch that does not throw.
  if (otherwise && onlyThrows(then) !== onlyThrows(otherwise)) return runStatement(evaluator, onlyThrows(then) ? otherwise : then, scope);
  const branches = [then, otherwise].filter((b): b is Statement => b !== undefined && !onlyThrows(b));
  return branches.some(mayReturn) ? { returned: true, value: condition } : goOn;
}

function runAssignment(evaluator: Evaluation, expression: Node, scope: Scope): Completion {
  if (!Node.isBinaryExpression(expression) || expression.getOperatorToken().getText() !== '=') return goOn;
  const target = expression.getLeft();
  const declaration = Node.isIdentifier(target) ? target.getSymbol()?.getValueDeclaration() : undefined;
  const home = declaration ? scope.scopeOf(declaration) : undefined;
  if (declaration && home) home.set(declaration, evaluator.evaluate(expression.getRight(), scope));
  return goOn;
}

function onlyThrows(statement: Statement): boolean {
  if (Node.isThrowStatement(statement)) return true;
  return Node.isBlock(statement) && statement.getStatements().length > 0 && statement.getStatements().every((s) => Node.isThrowStatement(s));
}

function mayReturn(statement: Node): boolean {
  if (Node.isReturnStatement(statement)) return true;
  let found = false;
  statement.forEachDescendant((node, traversal) => {
    if (Node.isFunctionLikeDeclaration(node) || Node.isArrowFunction(node) || Node.isFunctionExpression(node)) return traversal.skip();
    if (Node.isReturnStatement(node)) {
      found = true;
      traversal.stop();
    }
    return undefined;
  });
  return found;
}
