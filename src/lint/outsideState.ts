import { Node, SyntaxKind } from 'ts-morph';
import { unwrap } from './contextUse.js';

/** Methods that change a Map, Set, WeakMap, WeakSet or array in place. */
const MUTATORS = new Set(['set', 'add', 'delete', 'clear', 'push', 'pop', 'shift', 'unshift', 'splice', 'sort', 'reverse', 'fill', 'copyWithin']);
const MUTABLE_COLLECTIONS = new Set(['Map', 'Set', 'WeakMap', 'WeakSet', 'Array']);

/**
 * What a node writes that outlives the call, if it does (the rule `state-outside-store`): an
 * assignment (not `??=` or `||=`), `++`/`--`, `delete` or in-place collection method (`cache.set`,
 * `seen.add`, `list.push`) on a
 * variable declared outside every function that the walk entered, that is at module scope or in
 * a function that made the decide function or effect (a factory's closure). `entered` holds the
 * bodies of the functions the walk entered: a variable declared in one of them (or in a function
 * inside one) is made anew by each call.
 */
export function outsideStateWrite(node: Node, entered: ReadonlySet<Node>): string | undefined {
  if (Node.isBinaryExpression(node) && isWrite(node.getOperatorToken().getKind())) {
    const written = baseVariable(node.getLeft());
    return written && isOutside(written, entered) ? `writes '${unwrap(node.getLeft()).getText()}'` : undefined;
  }
  if (Node.isDeleteExpression(node)) {
    const written = baseVariable(node.getExpression());
    return written && isOutside(written, entered) ? `deletes '${unwrap(node.getExpression()).getText()}'` : undefined;
  }
  if ((Node.isPrefixUnaryExpression(node) || Node.isPostfixUnaryExpression(node)) && isIncrement(node.getOperatorToken())) {
    const written = baseVariable(node.getOperand());
    return written && isOutside(written, entered) ? `writes '${unwrap(node.getOperand()).getText()}'` : undefined;
  }
  if (Node.isCallExpression(node)) {
    const callee = unwrap(node.getExpression());
    if (!Node.isPropertyAccessExpression(callee) || !MUTATORS.has(callee.getName())) return undefined;
    const receiver = callee.getExpression();
    if (!isMutableCollection(receiver)) return undefined;
    const written = baseVariable(receiver);
    return written && isOutside(written, entered) ? `calls '${callee.getText()}'` : undefined;
  }
  return undefined;
}

/** An assignment, but for `??=` and `||=`: a lazy initialisation (a client made on first use) writes the same each time. */
function isWrite(kind: SyntaxKind): boolean {
  if (kind === SyntaxKind.QuestionQuestionEqualsToken || kind === SyntaxKind.BarBarEqualsToken) return false;
  return kind >= SyntaxKind.FirstAssignment && kind <= SyntaxKind.LastAssignment;
}

function isIncrement(kind: SyntaxKind): boolean {
  return kind === SyntaxKind.PlusPlusToken || kind === SyntaxKind.MinusMinusToken;
}

function isMutableCollection(node: Node): boolean {
  const type = node.getType();
  return type.isArray() || MUTABLE_COLLECTIONS.has(type.getSymbol()?.getName() ?? '');
}

/** The variable declaration at the base of `a`, `a.b.c` or `a[k]` (not `this`, a parameter or an import). */
function baseVariable(target: Node): Node | undefined {
  let at = unwrap(target);
  while (Node.isPropertyAccessExpression(at) || Node.isElementAccessExpression(at)) at = unwrap(at.getExpression());
  if (!Node.isIdentifier(at)) return undefined;
  const declaration = at.getSymbol()?.getValueDeclaration();
  if (!declaration || declaration.getSourceFile().isDeclarationFile()) return undefined;
  return Node.isVariableDeclaration(declaration) || Node.isBindingElement(declaration) ? declaration : undefined;
}

/** Whether a variable outlives the call: not declared in an entered function, nor in a function inside one. */
function isOutside(declaration: Node, entered: ReadonlySet<Node>): boolean {
  for (let at = declaration.getParent(); at; at = at.getParent()) if (entered.has(at)) return false;
  return true;
}
