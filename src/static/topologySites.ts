import { Node, SyntaxKind, type CallExpression, type SourceFile } from 'ts-morph';

/** A `.build()` call that ends a DSL chain, and the function (if any) it is declared in. */
export interface TopologySite {
  readonly build: CallExpression;
  /** The innermost function around the chain, if it is declared in one. */
  readonly enclosing: Node | undefined;
}

/** Every `.build()` of a StreamBuilder in `file`, in source order. */
export function topologySites(file: SourceFile): TopologySite[] {
  if (!file.getFullText().includes('build(')) return [];
  const sites: TopologySite[] = [];
  for (const call of file.getDescendantsOfKind(SyntaxKind.CallExpression)) {
    const callee = call.getExpression();
    if (!Node.isPropertyAccessExpression(callee) || callee.getName() !== 'build' || call.getArguments().length > 0) continue;
    if (callee.getExpression().getType().getSymbol()?.getName() !== 'StreamBuilder') continue;
    sites.push({ build: call, enclosing: enclosingFunction(call) });
  }
  return sites;
}

/** The innermost function-like node around `node`. */
export function enclosingFunction(node: Node): Node | undefined {
  return node.getFirstAncestor((a) => Node.isFunctionDeclaration(a) || Node.isArrowFunction(a) || Node.isFunctionExpression(a) || Node.isMethodDeclaration(a));
}

/** What a topology is called: the function or variable that holds it, `default` for a default export. */
export function nameOf(node: Node): string {
  if (Node.isFunctionDeclaration(node) || Node.isMethodDeclaration(node)) return node.getName() ?? 'default';
  for (let at: Node | undefined = node; at; at = at.getParent()) {
    if (Node.isVariableDeclaration(at) || Node.isPropertyAssignment(at)) return at.getName();
    if (Node.isExportAssignment(at)) return 'default';
    if (at !== node && (Node.isFunctionDeclaration(at) || Node.isMethodDeclaration(at))) return at.getName() ?? 'default';
  }
  return 'topology';
}

/** Calls of a named function, found through the language service. */
export function callsOf(fn: Node): CallExpression[] {
  const name = Node.isFunctionDeclaration(fn) ? fn.getNameNode() : fn.getParentIfKind(SyntaxKind.VariableDeclaration)?.getNameNode();
  if (!name || !Node.isIdentifier(name)) return [];
  return name
    .findReferencesAsNodes()
    .map((ref) => ref.getParentIfKind(SyntaxKind.CallExpression))
    .filter((call): call is CallExpression => call !== undefined && call.getExpression().getText() === name.getText());
}
