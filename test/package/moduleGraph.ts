// The imports of the compiled package (dist/), read with the TypeScript parser: what each shipped
// module imports statically (loaded with it) and dynamically (loaded when that code runs).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export const root = resolve(import.meta.dirname, '../..');

export interface ModuleImports {
  readonly file: string;
  readonly static: readonly string[];
  readonly dynamic: readonly string[];
}

/** The import specifiers of one .js, .mjs or .d.ts file; type-only imports count only in .d.ts files. */
export function importsOf(file: string): ModuleImports {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
  const staticImports: string[] = [];
  const dynamicImports: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      staticImports.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [specifier] = node.arguments;
      if (specifier && ts.isStringLiteralLike(specifier)) dynamicImports.push(specifier.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      staticImports.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { file, static: staticImports, dynamic: dynamicImports };
}

/** Every file under DIR (relative to the repository) whose name ends with one of the suffixes. */
export function filesUnder(dir: string, suffixes: readonly string[]): string[] {
  const top = join(root, dir);
  if (!existsSync(top)) throw new Error(`${dir} does not exist: run npm run build first`);
  return readdirSync(top, { recursive: true, encoding: 'utf8' })
    .map((name) => join(top, name))
    .filter((file) => suffixes.some((suffix) => file.endsWith(suffix)));
}

/** The package a bare specifier names ('@scope/name/sub' → '@scope/name'), or undefined for a relative path or a Node.js module. */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || isBuiltin(specifier)) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * The packages reached from a module by static imports only (what loading it loads), each with
 * the chain of files that reaches it, relative to the repository.
 */
export function staticallyReached(entry: string): Map<string, string[]> {
  const reached = new Map<string, string[]>();
  const seen = new Set<string>();
  const walk = (file: string, chain: string[]): void => {
    if (seen.has(file)) return;
    seen.add(file);
    const here = [...chain, relative(root, file)];
    for (const specifier of importsOf(file).static) {
      const name = packageOf(specifier);
      if (name) {
        if (!reached.has(name)) reached.set(name, here);
      } else if (specifier.startsWith('.')) {
        walk(resolve(dirname(file), specifier), here);
      }
    }
  };
  walk(join(root, entry), []);
  return reached;
}
