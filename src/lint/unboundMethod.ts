import { Node, SyntaxKind } from 'ts-morph';
import { functionDeclarationOf } from './callGraph.js';
import { unwrap } from './contextUse.js';

/**
 * A method given to the builder as `obj.method` (not bound, not a class field's arrow) whose body
 * uses its own `this`: orderly calls every function it is given alone, so that `this` is
 * undefined at every call. Returns the method as written, else undefined.
 */
export function unboundMethodUsingThis(given: Node): string | undefined {
  const access = unwrap(given);
  if (!Node.isPropertyAccessExpression(access)) return undefined;
  const method = functionDeclarationOf(access.getNameNode())?.body;
  if (!method || !(Node.isMethodDeclaration(method) || Node.isGetAccessorDeclaration(method))) return undefined;
  const ownThis = method.getDescendantsOfKind(SyntaxKind.ThisKeyword).some((self) => thisScope(self) === method);
  return ownThis ? access.getText() : undefined;
}

/** The function whose `this` a `this` is: the nearest enclosing function that is not an arrow. */
function thisScope(self: Node): Node | undefined {
  return self.getFirstAncestor((a) => (Node.isFunctionLikeDeclaration(a) || Node.isFunctionExpression(a)) && !Node.isArrowFunction(a));
}
