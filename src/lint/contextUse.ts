import { Node, type Type } from 'ts-morph';
import { packageOf } from '../static/packageOf.js';

/** How a node misuses a decide function's context, if it does: the rule `decide-context`. */
export function contextMisuse(node: Node): string | undefined {
  if (Node.isPropertyAccessExpression(node)) {
    // The target of an assignment is a write: the assignment below reports it, not as a read.
    const parent = node.getParent();
    if (Node.isBinaryExpression(parent) && parent.getLeft() === node && isAssignment(parent.getOperatorToken().getText())) return undefined;
    const context = contextType(unwrap(node.getExpression()));
    if (context && !context.getProperties().some((p) => p.getName() === node.getName())) {
      return `reads '${node.getName()}', which DecideContext does not declare`;
    }
    return undefined;
  }
  if (!Node.isBinaryExpression(node) || !isAssignment(node.getOperatorToken().getText())) return undefined;
  const left = unwrap(node.getLeft());
  if ((Node.isPropertyAccessExpression(left) || Node.isElementAccessExpression(left)) && contextType(unwrap(left.getExpression()))) {
    return `writes '${left.getText()}': the context is the engine's, read it only`;
  }
  if (contextType(unwrap(node.getRight())) && !isLocal(left)) return `keeps the context in '${left.getText()}', beyond the call`;
  return undefined;
}

function isAssignment(operator: string): boolean {
  return operator.endsWith('=') && !['==', '===', '!=', '!==', '<=', '>='].includes(operator);
}

/** The type of `node` when it is orderly's DecideContext. */
function contextType(node: Node): Type | undefined {
  const type = node.getType();
  const declaration = type.getSymbol()?.getDeclarations()[0];
  if (type.getSymbol()?.getName() !== 'DecideContext' || !declaration) return undefined;
  return packageOf(declaration.getSourceFile().getFilePath())?.name === 'orderly' ? type : undefined;
}

/** Whether an assignment target is a variable declared inside a function (so it ends with the call). */
function isLocal(target: Node): boolean {
  if (!Node.isIdentifier(target)) return false;
  const declaration = target.getSymbol()?.getValueDeclaration();
  return declaration !== undefined && declaration.getFirstAncestor((a) => Node.isFunctionLikeDeclaration(a) || Node.isArrowFunction(a)) !== undefined;
}

/** The expression inside parentheses, casts (`as`, `<T>`, `satisfies`) and `!`. */
export function unwrap(node: Node): Node {
  let at = node;
  while (
    Node.isParenthesizedExpression(at) ||
    Node.isAsExpression(at) ||
    Node.isNonNullExpression(at) ||
    Node.isTypeAssertion(at) ||
    Node.isSatisfiesExpression(at)
  )
    at = at.getExpression();
  return at;
}
