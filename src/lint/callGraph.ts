import { Node, SyntaxKind } from 'ts-morph';
import { isOrderlyLibrary } from '../static/packageOf.js';
import { baseOf, outlives } from './outlives.js';

/** One step of a chain of calls: the function entered, and where it was called (or passed) from. */
export interface ChainLink {
  readonly name: string;
  readonly at: Node;
}

/** Whether a declaration is the project's own code, which the walk follows (libraries and orderly itself it does not). */
export function isFollowed(declaration: Node): boolean {
  const file = declaration.getSourceFile();
  return !file.isDeclarationFile() && !file.isInNodeModules() && !isOrderlyLibrary(file.getFilePath());
}

/**
 * Walks the code reachable from `root` inside the project: `root` itself, and every function of
 * the project that reachable code calls or passes on, each once (a method once with an instance
 * that outlives the call and once with one that does not). `visit` sees every node of the
 * reachable code with the chain of calls that leads there from `root`, the functions on that chain
 * (`root` first, the function whose code it is last): a variable declared inside one of them is
 * made by the call that the chain makes; and whether `this` there outlives the call (`root`'s
 * does: the topology holds it).
 */
export function walkCallGraph(
  root: Node,
  rootLink: ChainLink,
  visit: (node: Node, chain: readonly ChainLink[], onPath: ReadonlySet<Node>, thisOutlives: boolean) => void,
): void {
  const seen = { outliving: new Set<Node>([root]), made: new Set<Node>() };
  const queue: Array<{ node: Node; chain: readonly ChainLink[]; onPath: ReadonlySet<Node>; thisOutlives: boolean }> = [
    { node: root, chain: [rootLink], onPath: new Set([root]), thisOutlives: true },
  ];
  for (let unit = queue.shift(); unit; unit = queue.shift()) {
    const { chain, onPath, thisOutlives } = unit;
    const each = (node: Node): void => {
      visit(node, chain, onPath, thisOutlives);
      if (!Node.isIdentifier(node)) return;
      const target = functionDeclarationOf(node);
      if (!target) return;
      const receiver = receiverOf(node, onPath, thisOutlives);
      const outliving = receiver === 'outlives';
      const seenAs = outliving ? seen.outliving : seen.made;
      if (seenAs.has(target.body)) return;
      seenAs.add(target.body);
      // A method of an object made by the call (or handed to it): the functions that made the method made it then too, so their variables are the call's own.
      const makers = receiver === 'made' ? enclosingFunctions(target.body) : [];
      queue.push({
        node: target.body,
        chain: [...chain, { name: target.name, at: node }],
        onPath: new Set([...onPath, ...makers, target.body]),
        thisOutlives: outliving,
      });
    };
    each(unit.node);
    unit.node.forEachDescendant(each);
  }
}

/**
 * For `receiver.method` (called or passed on): whether the receiver outlives the call (so `this`
 * in the method does), or was made by the call or handed to it; none for a plain name.
 */
function receiverOf(name: Node, onPath: ReadonlySet<Node>, thisOutlives: boolean): 'outlives' | 'made' | undefined {
  const access = name.getParent();
  if (!Node.isPropertyAccessExpression(access) || access.getNameNode() !== name) return undefined;
  return outlives(baseOf(access.getExpression()), onPath, thisOutlives) ? 'outlives' : 'made';
}

/** The functions around a node, innermost first. */
function enclosingFunctions(node: Node): Node[] {
  return node.getAncestors().filter((a) => Node.isFunctionLikeDeclaration(a) || Node.isArrowFunction(a) || Node.isFunctionExpression(a));
}

/** The project function an identifier refers to (a function, a method, or a variable holding an arrow). */
export function functionDeclarationOf(identifier: Node): { name: string; body: Node } | undefined {
  if (identifier.getParent()?.getKind() === SyntaxKind.ImportSpecifier) return undefined;
  let symbol = identifier.getSymbol();
  if (symbol?.isAlias()) symbol = symbol.getAliasedSymbol() ?? symbol;
  const declaration = symbol?.getValueDeclaration() ?? symbol?.getDeclarations()[0];
  if (!declaration || declaration === identifier.getParent() || !isFollowed(declaration)) return undefined;
  if (
    Node.isFunctionDeclaration(declaration) ||
    Node.isMethodDeclaration(declaration) ||
    Node.isGetAccessorDeclaration(declaration) ||
    Node.isSetAccessorDeclaration(declaration)
  ) {
    return { name: declaration.getName() ?? identifier.getText(), body: declaration };
  }
  if (Node.isVariableDeclaration(declaration) || Node.isPropertyAssignment(declaration) || Node.isPropertyDeclaration(declaration)) {
    const initializer = declaration.getInitializer();
    if (initializer && (Node.isArrowFunction(initializer) || Node.isFunctionExpression(initializer))) return { name: declaration.getName(), body: initializer };
  }
  return undefined;
}
