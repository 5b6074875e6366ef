import { Node, SyntaxKind, type ClassDeclaration, type ClassExpression } from 'ts-morph';
import { functionDeclarationOf } from './callGraph.js';
import { unwrap } from './contextUse.js';

/**
 * A method given to the builder as `obj.method` (not bound, not a class field's arrow) whose body
 * uses its own `this`: orderly calls every function it is given alone, so that `this` is
 * undefined at every call. A function expression held by an object literal's property or a class
 * field has its own `this` as a method has. Not a getter: reading `obj.method` runs it on `obj`,
 * and what it returns is not the getter. Not a method that the instance's constructor (or a base
 * class's) assigns to `this.method`: the instance's own property, bound, hides the prototype's.
 * Returns the method as written, else undefined.
 */
export function unboundMethodUsingThis(given: Node): string | undefined {
  const access = unwrap(given);
  if (!Node.isPropertyAccessExpression(access)) return undefined;
  const method = functionDeclarationOf(access.getNameNode())?.body;
  if (!method || !(Node.isMethodDeclaration(method) || Node.isFunctionExpression(method))) return undefined;
  if (Node.isMethodDeclaration(method) && !method.isStatic() && assignedByConstructor(access.getName(), [access.getExpression(), method])) return undefined;
  const ownThis = method.getDescendantsOfKind(SyntaxKind.ThisKeyword).some((self) => thisScope(self) === method);
  return ownThis ? access.getText() : undefined;
}

/** The function whose `this` a `this` is: the nearest enclosing function that is not an arrow. */
function thisScope(self: Node): Node | undefined {
  return self.getFirstAncestor((a) => (Node.isFunctionLikeDeclaration(a) || Node.isFunctionExpression(a)) && !Node.isArrowFunction(a));
}

/**
 * Whether a constructor of the receiver's class or of the method's class, or of a class either
 * extends, assigns `this.<name>` (`this.decide = this.decide.bind(this)`): each instance then has
 * its own property, which is what `obj.name` reads.
 */
function assignedByConstructor(name: string, from: readonly Node[]): boolean {
  const classes = new Set(from.flatMap((node) => classChain(classOf(node))));
  return [...classes].some((c) =>
    c.getConstructors().some((ctor) =>
      ctor.getDescendantsOfKind(SyntaxKind.BinaryExpression).some((assignment) => {
        if (assignment.getOperatorToken().getKind() !== SyntaxKind.EqualsToken) return false;
        const left = unwrap(assignment.getLeft());
        if (!Node.isPropertyAccessExpression(left) || left.getName() !== name) return false;
        const self = unwrap(left.getExpression());
        return Node.isThisExpression(self) && thisScope(self) === ctor;
      }),
    ),
  );
}

type Class = ClassDeclaration | ClassExpression;

/** The class a method is declared in, or the class of a receiver's type (an instance of it). */
function classOf(node: Node): Class | undefined {
  const parent = node.getParent();
  if (Node.isMethodDeclaration(node) && (Node.isClassDeclaration(parent) || Node.isClassExpression(parent))) return parent;
  const declarations = node.getType().getSymbol()?.getDeclarations() ?? [];
  return declarations.find((d): d is Class => Node.isClassDeclaration(d) || Node.isClassExpression(d));
}

/** A class and the classes it extends, as far as the project declares them. */
function classChain(start: Class | undefined): Class[] {
  const chain: Class[] = [];
  for (let c = start; c && !chain.includes(c) && chain.length < 16; c = c.getBaseClass()) chain.push(c);
  return chain;
}
