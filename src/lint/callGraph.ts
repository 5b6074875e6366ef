import { Node, SyntaxKind } from 'ts-morph';
import { isOrderlyLibrary } from '../static/packageOf.js';

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
 * the project that reachable code calls or passes on, each once. `visit` sees every node of the
 * reachable code with the chain of calls that leads there from `root`, and the functions on that
 * chain (`root` first, the function whose code it is last): a variable declared inside one of
 * them is made by the call that the chain makes.
 */
export function walkCallGraph(root: Node, rootLink: ChainLink, visit: (node: Node, chain: readonly ChainLink[], onPath: ReadonlySet<Node>) => void): void {
  const seen = new Set<Node>([root]);
  const queue: Array<{ node: Node; chain: readonly ChainLink[]; onPath: ReadonlySet<Node> }> = [{ node: root, chain: [rootLink], onPath: new Set([root]) }];
  for (let unit = queue.shift(); unit; unit = queue.shift()) {
    const { chain, onPath } = unit;
    const each = (node: Node): void => {
      visit(node, chain, onPath);
      if (!Node.isIdentifier(node)) return;
      const target = functionDeclarationOf(node);
      if (target && !seen.has(target.body)) {
        seen.add(target.body);
        queue.push({ node: target.body, chain: [...chain, { name: target.name, at: node }], onPath: new Set([...onPath, target.body]) });
      }
    };
    each(unit.node);
    unit.node.forEachDescendant(each);
  }
}

/** The project function an identifier refers to (a function, a method, or a variable holding an arrow). */
export function functionDeclarationOf(identifier: Node): { name: string; body: Node } | undefined {
  if (identifier.getParent()?.getKind() === SyntaxKind.ImportSpecifier) return undefined;
  let symbol = identifier.getSymbol();
  if (symbol?.isAlias()) symbol = symbol.getAliasedSymbol() ?? symbol;
  const declaration = symbol?.getValueDeclaration() ?? symbol?.getDeclarations()[0];
  if (!declaration || declaration === identifier.getParent() || !isFollowed(declaration)) return undefined;
  if (Node.isFunctionDeclaration(declaration) || Node.isMethodDeclaration(declaration)) {
    return { name: declaration.getName() ?? identifier.getText(), body: declaration };
  }
  if (Node.isVariableDeclaration(declaration) || Node.isPropertyAssignment(declaration)) {
    const initializer = declaration.getInitializer();
    if (initializer && (Node.isArrowFunction(initializer) || Node.isFunctionExpression(initializer))) return { name: declaration.getName(), body: initializer };
  }
  return undefined;
}
