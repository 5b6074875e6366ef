import { Node, VariableDeclarationKind } from 'ts-morph';
import { unwrap } from './contextUse.js';

/**
 * Where the object or variable that `a`, `a.b.c`, `a[k]` or `this.a` writes lives, as far as the
 * walk can tell: a variable's, a parameter's or a class's declaration, `this` of a class member,
 * or unknown (an import, a call's result, `this` of a plain function). A `const` that names
 * another object (`const c = counter`, `const seen = this.seen`) is followed to where that lives.
 */
export type Base = { readonly kind: 'variable'; readonly declaration: Node } | { readonly kind: 'instance' } | undefined;

export function baseOf(target: Node, depth = 0): Base {
  let at = unwrap(target);
  while (Node.isPropertyAccessExpression(at) || Node.isElementAccessExpression(at)) at = unwrap(at.getExpression());
  if (Node.isThisExpression(at)) return isInstanceThis(at) ? { kind: 'instance' } : undefined;
  if (!Node.isIdentifier(at)) return undefined;
  const parent = at.getParent();
  // A shorthand property in a destructuring pattern (`({ cursor } = item)`) names the variable it writes.
  const symbol = Node.isShorthandPropertyAssignment(parent) ? parent.getValueSymbol() : at.getSymbol();
  const declaration = symbol?.getValueDeclaration();
  if (!declaration || declaration.getSourceFile().isDeclarationFile()) return undefined;
  const aliased = aliasOf(declaration);
  if (aliased && depth < 8) return baseOf(aliased, depth + 1);
  // A class's static fields are the class's own: they live where the class is declared, as a variable does.
  return Node.isVariableDeclaration(declaration) ||
    Node.isBindingElement(declaration) ||
    Node.isParameterDeclaration(declaration) ||
    Node.isClassDeclaration(declaration)
    ? { kind: 'variable', declaration }
    : undefined;
}

/**
 * What a `const` declared as another name for an object is initialised from: a variable, `this`,
 * or a property of one (`const c = counter`). Its writes reach that object, not a copy. A `let`
 * may be given another object later, and any other initializer makes or returns its own.
 */
function aliasOf(declaration: Node): Node | undefined {
  if (!Node.isVariableDeclaration(declaration) || !Node.isIdentifier(declaration.getNameNode())) return undefined;
  if (declaration.getVariableStatement()?.getDeclarationKind() !== VariableDeclarationKind.Const) return undefined;
  const initializer = declaration.getInitializer();
  if (!initializer) return undefined;
  let at = unwrap(initializer);
  while (Node.isPropertyAccessExpression(at) || Node.isElementAccessExpression(at)) at = unwrap(at.getExpression());
  return Node.isIdentifier(at) || Node.isThisExpression(at) ? initializer : undefined;
}

/**
 * Whether what `base` names outlives one call of the chain whose functions are `onPath`: a variable
 * not declared inside one of them (a parameter of a function that made the decide function is
 * kept by its closure as a variable is), or the instance when `thisOutlives` (the walk reached the
 * method through an object that outlives the call).
 */
export function outlives(base: Base, onPath: ReadonlySet<Node>, thisOutlives: boolean): boolean {
  if (base === undefined) return false;
  if (base.kind === 'instance') return thisOutlives;
  for (let at = base.declaration.getParent(); at; at = at.getParent()) if (onPath.has(at)) return false;
  return true;
}

/**
 * `this` of a class's method, accessor or field (arrows inherit it): the instance, or the class
 * for a static one. A constructor's `this` is the instance it makes, made anew by each `new`; a
 * plain function's `this` depends on its call.
 */
function isInstanceThis(node: Node): boolean {
  for (let at = node.getParent(); at; at = at.getParent()) {
    if (Node.isArrowFunction(at)) continue;
    if (Node.isMethodDeclaration(at) || Node.isGetAccessorDeclaration(at) || Node.isSetAccessorDeclaration(at) || Node.isPropertyDeclaration(at)) return true;
    if (Node.isConstructorDeclaration(at) || Node.isFunctionDeclaration(at) || Node.isFunctionExpression(at) || Node.isSourceFile(at)) return false;
  }
  return false;
}
