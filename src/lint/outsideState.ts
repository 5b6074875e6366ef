import { Node, SyntaxKind, type Type } from 'ts-morph';
import { unwrap } from './contextUse.js';
import { baseOf, outlives } from './outlives.js';

/** Methods that change a Map, Set, WeakMap, WeakSet or array in place. */
const MUTATORS = new Set(['set', 'add', 'delete', 'clear', 'push', 'pop', 'shift', 'unshift', 'splice', 'sort', 'reverse', 'fill', 'copyWithin']);
const MUTABLE_COLLECTIONS = new Set(['Map', 'Set', 'WeakMap', 'WeakSet', 'Array']);

/**
 * What a node writes that outlives the call, if it does (the rule `state-outside-store`): an
 * assignment (a destructuring one, a `for...of` or `for...in` head included), `++`/`--`, `delete`,
 * `Object.assign` or an in-place collection method (`cache.set`, `seen.add`, `list.push`) on a
 * variable declared outside the functions of the call chain (`onPath`): at module scope, or in a
 * function that made the decide function or effect (a factory's closure); or on `this` in a class
 * member that the walk reached through an object that outlives the call (`thisOutlives`: a method
 * passed to the builder, or called on a module's or a factory's instance). A variable declared in
 * one of them, or in a function inside one, is made anew by each call, as is an instance made by
 * `new` inside one. A lazy initialisation of
 * a variable (`client ??= make()`, `if (!client) client = make()`) writes the same each time and
 * is not a finding.
 */
export function outsideStateWrite(node: Node, onPath: ReadonlySet<Node>, thisOutlives: boolean): string | undefined {
  const outside = (target: Node): boolean => outlives(baseOf(target), onPath, thisOutlives);
  if (Node.isBinaryExpression(node) && isAssignment(node.getOperatorToken().getKind())) {
    if (isLazyInitialisation(node)) return undefined;
    const target = [...assignedTargets(node.getLeft())].find(outside);
    return target ? `writes '${unwrap(target).getText()}'` : undefined;
  }
  if ((Node.isForOfStatement(node) || Node.isForInStatement(node)) && !Node.isVariableDeclarationList(node.getInitializer())) {
    const target = [...assignedTargets(node.getInitializer())].find(outside);
    return target ? `writes '${unwrap(target).getText()}' in a loop's head` : undefined;
  }
  if (Node.isDeleteExpression(node)) {
    return outside(node.getExpression()) ? `deletes '${unwrap(node.getExpression()).getText()}'` : undefined;
  }
  if ((Node.isPrefixUnaryExpression(node) || Node.isPostfixUnaryExpression(node)) && isIncrement(node.getOperatorToken())) {
    return outside(node.getOperand()) ? `writes '${unwrap(node.getOperand()).getText()}'` : undefined;
  }
  if (Node.isCallExpression(node)) {
    const callee = unwrap(node.getExpression());
    if (!Node.isPropertyAccessExpression(callee)) return undefined;
    const target = node.getArguments()[0];
    if (callee.getText() === 'Object.assign' && target) return outside(target) ? `writes '${unwrap(target).getText()}' (Object.assign)` : undefined;
    if (!MUTATORS.has(callee.getName()) || !isMutableCollection(callee.getExpression().getType())) return undefined;
    return outside(callee.getExpression()) ? `calls '${callee.getText()}'` : undefined;
  }
  return undefined;
}

function isAssignment(kind: SyntaxKind): boolean {
  return kind >= SyntaxKind.FirstAssignment && kind <= SyntaxKind.LastAssignment;
}

function isIncrement(kind: SyntaxKind): boolean {
  return kind === SyntaxKind.PlusPlusToken || kind === SyntaxKind.MinusMinusToken;
}

/** `this.name`: an instance's own field, which a lazy initialisation may set as it sets a variable. */
function isThisField(node: Node): boolean {
  return Node.isPropertyAccessExpression(node) && Node.isThisExpression(unwrap(node.getExpression()));
}

/**
 * A variable given a value on first use only: `x ??= v`, `x ||= v`, `x = x ?? v`, `x = x || v`,
 * or `x = v` in an `if` on `!x`, `x === undefined`, `x === null` or `x == null`. Only a plain
 * variable or an instance's field (`this.client ??= v`): `seen[id] ??= true` records each id,
 * which is state.
 */
function isLazyInitialisation(assignment: Node): boolean {
  if (!Node.isBinaryExpression(assignment)) return false;
  const left = unwrap(assignment.getLeft());
  if (!Node.isIdentifier(left) && !isThisField(left)) return false;
  const name = left.getText();
  const operator = assignment.getOperatorToken().getKind();
  if (operator === SyntaxKind.QuestionQuestionEqualsToken || operator === SyntaxKind.BarBarEqualsToken) return true;
  if (operator !== SyntaxKind.EqualsToken) return false;
  const right = unwrap(assignment.getRight());
  if (Node.isBinaryExpression(right) && isDefaulting(right.getOperatorToken().getKind()) && unwrap(right.getLeft()).getText() === name) return true;
  const guard = assignment.getFirstAncestor((a) => Node.isIfStatement(a) || Node.isFunctionLikeDeclaration(a) || Node.isArrowFunction(a));
  return (
    guard !== undefined &&
    Node.isIfStatement(guard) &&
    isUnsetTest(guard.getExpression(), name) &&
    guard.getThenStatement().containsRange(assignment.getPos(), assignment.getEnd())
  );
}

function isDefaulting(kind: SyntaxKind): boolean {
  return kind === SyntaxKind.QuestionQuestionToken || kind === SyntaxKind.BarBarToken;
}

/** `!x`, `x === undefined`, `x === null`, `x == null` (or `undefined === x`, ...). */
function isUnsetTest(condition: Node, name: string): boolean {
  const test = unwrap(condition);
  if (Node.isPrefixUnaryExpression(test)) return test.getOperatorToken() === SyntaxKind.ExclamationToken && unwrap(test.getOperand()).getText() === name;
  if (!Node.isBinaryExpression(test)) return false;
  const operator = test.getOperatorToken().getKind();
  if (operator !== SyntaxKind.EqualsEqualsEqualsToken && operator !== SyntaxKind.EqualsEqualsToken) return false;
  const [a, b] = [unwrap(test.getLeft()).getText(), unwrap(test.getRight()).getText()];
  const unset = (text: string) => text === 'undefined' || text === 'null';
  return (a === name && unset(b)) || (b === name && unset(a));
}

/** The targets an assignment writes: itself, or each element of a destructuring pattern. */
function* assignedTargets(left: Node): Generator<Node> {
  const target = unwrap(left);
  if (Node.isArrayLiteralExpression(target)) {
    for (const element of target.getElements()) yield* assignedTargets(Node.isSpreadElement(element) ? element.getExpression() : element);
  } else if (Node.isObjectLiteralExpression(target)) {
    for (const property of target.getProperties()) {
      if (Node.isPropertyAssignment(property)) yield* assignedTargets(property.getInitializerOrThrow());
      else if (Node.isShorthandPropertyAssignment(property)) yield property.getNameNode();
      else if (Node.isSpreadAssignment(property)) yield* assignedTargets(property.getExpression());
    }
  } else if (Node.isBinaryExpression(target) && target.getOperatorToken().getKind() === SyntaxKind.EqualsToken) {
    // A default in a pattern: `[a = 1] = list`.
    yield* assignedTargets(target.getLeft());
  } else {
    yield target;
  }
}

/** A Map, Set, WeakMap, WeakSet or array, or a class extending one, possibly `| undefined`. */
function isMutableCollection(type: Type, depth = 0): boolean {
  const defined = type.getNonNullableType();
  if (defined.isUnion()) return defined.getUnionTypes().some((t) => isMutableCollection(t, depth + 1));
  if (defined.isArray() || MUTABLE_COLLECTIONS.has(defined.getSymbol()?.getName() ?? '')) return true;
  return depth < 4 && defined.getBaseTypes().some((base) => isMutableCollection(base, depth + 1));
}
