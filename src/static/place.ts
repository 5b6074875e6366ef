import { relative } from 'node:path';
import type { Node } from 'ts-morph';

/** A place in the project: a file relative to the working directory, and a 1-based line. */
export interface Place {
  readonly file: string;
  readonly line: number;
}

/** Where `node` starts, relative to `cwd`. */
export function placeOf(node: Node, cwd: string): Place {
  return { file: relative(cwd, node.getSourceFile().getFilePath()), line: node.getStartLineNumber() };
}
