import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Node, Project, ts, type SourceFile } from 'ts-morph';
import { dslFunctionNames } from './dslCalls.js';
import type { ProjectView } from './evaluator.js';
import { packageOf } from './packageOf.js';

/** A command line argument that names nothing to read. */
export class UsageError extends Error {}

/** The project to read and the files to look in. */
export interface LoadedProject {
  readonly project: Project;
  /** The files named on the command line (or by its tsconfig.json): topologies and agent steps are looked for here. */
  readonly targets: readonly SourceFile[];
  readonly view: ProjectView;
}

const fallbackOptions: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  skipLibCheck: true,
};

/**
 * Opens a TypeScript project from what the command line names: tsconfig.json files (their files),
 * directories (their .ts files, node_modules left out) or files. Without a tsconfig.json among
 * them, the nearest one above the first input gives the compiler options, so that imports resolve
 * as they do when the project is built.
 */
export function loadProject(inputs: readonly string[], cwd: string): LoadedProject {
  const paths = (inputs.length > 0 ? inputs : ['tsconfig.json']).map((input) => resolve(cwd, input));
  for (const path of paths) {
    if (!existsSync(path)) throw new UsageError(`${path} does not exist; name TypeScript files, directories or a tsconfig.json`);
  }
  const configs = paths.filter((p) => p.endsWith('.json'));
  const config = configs[0] ?? nearestConfig(paths[0]!);
  const project = config ? new Project({ tsConfigFilePath: config, skipAddingFilesFromTsConfig: true }) : new Project({ compilerOptions: fallbackOptions });
  const targets: SourceFile[] = [];
  for (const path of paths) {
    if (path.endsWith('.json')) targets.push(...project.addSourceFilesFromTsConfig(path));
    else if (statSync(path).isDirectory()) targets.push(...project.addSourceFilesAtPaths([`${path}/**/*.{ts,tsx,mts,cts}`, `!${path}/**/node_modules/**`]));
    else targets.push(project.addSourceFileAtPath(path));
  }
  const own = [...new Set(targets)].filter((file) => !file.isDeclarationFile() && !file.isInNodeModules());
  return { project, targets: own, view: projectView() };
}

function nearestConfig(from: string): string | undefined {
  for (let dir = statSync(from).isDirectory() ? from : dirname(from); ; dir = dirname(dir)) {
    const candidate = join(dir, 'tsconfig.json');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

function projectView(): ProjectView {
  return {
    dslFunctionOf(declaration) {
      if (!Node.isFunctionDeclaration(declaration)) return undefined;
      const name = declaration.getName();
      if (!name || !dslFunctionNames.has(name)) return undefined;
      const place = packageOf(declaration.getSourceFile().getFilePath());
      return place?.name === 'orderly' && /^(dist\/)?src\/dsl\/(stream|effect|serde)\.(d\.)?ts$/.test(place.path) ? name : undefined;
    },
    isProjectCode(declaration) {
      const file = declaration.getSourceFile();
      return !file.isDeclarationFile() && !file.isInNodeModules();
    },
  };
}
