import type { SourceFile } from 'ts-morph';

/** An `// orderly-allow: <rule> <reason>` comment. */
export interface Allow {
  readonly rule: string;
  readonly reason: string;
}

const ALLOW = /\/\/\s*orderly-allow:\s*([\w-]+)(?:[ \t]+(\S.*?))?\s*$/;

/**
 * The allow comment that applies to `line` (1-based) of `file`: at the end of that line, or alone
 * on the line just above it.
 */
export function allowFor(file: SourceFile, line: number): Allow | undefined {
  const lines = linesOf(file);
  const own = ALLOW.exec(lines[line - 1] ?? '');
  const above = /^\s*\/\//.test(lines[line - 2] ?? '') ? ALLOW.exec(lines[line - 2]!) : null;
  const match = own ?? above;
  return match ? { rule: match[1]!, reason: match[2] ?? '' } : undefined;
}

const cache = new WeakMap<SourceFile, string[]>();

function linesOf(file: SourceFile): string[] {
  let lines = cache.get(file);
  if (!lines) {
    lines = file.getFullText().split('\n');
    cache.set(file, lines);
  }
  return lines;
}
