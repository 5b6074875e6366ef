// Code blocks of the docs, taken out and written as modules of the repository, so that a test can
// type-check them as written and run them: a snippet a reader copies must compile and do what it says.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';

export const root = resolve(import.meta.dirname, '../../..');
export const snippetsDir = join(root, '.cache', 'doc-snippets');

/** The ```ts blocks of a markdown file after the heading `from` (and before `until`), in order. */
export function tsBlocks(file: string, from?: string, until?: string): string[] {
  let text = readFileSync(join(root, file), 'utf8');
  if (from !== undefined) {
    const at = text.indexOf(`\n${from}\n`);
    if (at < 0) throw new Error(`${file}: no heading '${from}'`);
    text = text.slice(at);
  }
  if (until !== undefined) {
    const end = text.indexOf(`\n${until}\n`);
    if (end >= 0) text = text.slice(0, end);
  }
  const blocks = [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  if (blocks.length === 0) throw new Error(`${file}: no \`\`\`ts block${from ? ` under '${from}'` : ''}`);
  return blocks;
}

/** Writes `code` as a module under .cache/doc-snippets, with `orderly`, `orderly/testkit` and `orderly/metrics` pointing at this repository's source. */
export function writeSnippet(name: string, code: string): string {
  mkdirSync(snippetsDir, { recursive: true });
  const file = join(snippetsDir, `${name}.ts`);
  const pointed = code
    .replaceAll("from 'orderly/testkit'", `from '${join(root, 'testkit', 'index.js')}'`)
    .replaceAll("from 'orderly/metrics'", `from '${join(root, 'src', 'metrics', 'index.js')}'`)
    .replaceAll("from 'orderly'", `from '${join(root, 'src', 'index.js')}'`);
  writeFileSync(file, pointed);
  return file;
}

/** The type errors of some modules (checked together: one may import another), in strict mode, as messages. */
export function typeProblems(...files: string[]): string[] {
  return typeProblemsIn(files);
}

/** The type errors of several modules, checked in one program (one load of the libraries and of orderly's source), as messages naming the module. */
export function typeProblemsIn(files: readonly string[]): string[] {
  const program = ts.createProgram([...files], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    types: ['node'],
  });
  const named = files.length > 1;
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file !== undefined && files.includes(d.file.fileName))
    .map(
      (d) =>
        `${named ? `${d.file!.fileName.split('/').pop()} ` : ''}${d.start !== undefined ? `line ${d.file!.getLineAndCharacterOfPosition(d.start).line + 1}: ` : ''}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
    );
}
