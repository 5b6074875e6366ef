// The README's "A topology" snippet compiles as written (strict), against orderly's own source: a
// snippet that a reader copies must not fail with a type error.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, expect, test } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');
const dir = join(root, '.cache', 'readme-topology');

/** The first ```ts block after the heading `## A topology`. */
function topologySnippet(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## A topology\n'));
  const block = /```ts\n([\s\S]*?)```/.exec(section);
  if (!block?.[1]) throw new Error("README.md: no ```ts block under '## A topology'");
  return block[1];
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("the README's topology snippet type-checks in strict mode", () => {
  const snippet = topologySnippet();
  expect(snippet).toContain("from 'orderly'");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'topology.ts');
  // Only the package name changes: in the repository, 'orderly' is its source.
  writeFileSync(file, snippet.replace("from 'orderly'", `from '${join(root, 'src', 'index.js')}'`));
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    types: ['node'],
  });
  const problems = ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file?.fileName === file)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  expect(problems).toEqual([]);
});
