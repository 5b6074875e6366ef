// The shipped declarations (dist/**/*.d.ts) as the strictest consumer reads them: a module that
// imports every entry point of package.json "exports", type-checked with `strict`,
// `exactOptionalPropertyTypes` and `skipLibCheck: false`, so that the declarations themselves are
// checked (a class that no longer implements its interface under exactOptionalPropertyTypes fails
// here, not in the user's build). Reads dist/ (scripts/test.sh builds before it tests).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { expect, test } from 'vitest';
import { root } from './moduleGraph.js';

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> };

test('the shipped declarations type-check in a consumer with exactOptionalPropertyTypes and skipLibCheck: false', () => {
  const entries = Object.keys(pkg.exports)
    .filter((entry) => entry !== './package.json')
    .map((entry) => (entry === '.' ? pkg.name : `${pkg.name}/${entry.slice(2)}`));
  // Inside the package's folder, so that `orderly/...` resolves to the package itself through its "exports".
  const dir = join(root, '.cache', 'strict-consumer');
  mkdirSync(dir, { recursive: true });
  const consumer = join(dir, 'consumer.ts');
  writeFileSync(consumer, entries.map((entry, i) => `import * as entry${i} from '${entry}';\nexport { entry${i} };\n`).join(''));

  const program = ts.createProgram([consumer], {
    strict: true,
    exactOptionalPropertyTypes: true,
    skipLibCheck: false,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
  });
  const dist = join(root, 'dist');
  const ours = (file: string): boolean => file === consumer || (file.startsWith(`${dist}/`) && !file.includes('/node_modules/'));
  // Only our files' diagnostics are computed: checking every library's would take seconds more.
  const diagnostics = [
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...program
      .getSourceFiles()
      .filter((f) => ours(f.fileName))
      .flatMap((f) => [...program.getSyntacticDiagnostics(f), ...program.getSemanticDiagnostics(f)]),
  ];
  const problems = diagnostics.map((d) => {
    const where = d.file ? `${relative(root, d.file.fileName)}(${d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : '?'}): ` : '';
    return `${where}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
  // Every entry point resolved to its declarations in dist/ (a missing one would check nothing).
  const loaded = program.getSourceFiles().map((f) => relative(root, f.fileName));
  for (const entry of Object.values(pkg.exports)) {
    if (typeof entry === 'object' && entry !== null && 'types' in entry) expect(loaded).toContain(String(entry.types).slice(2));
  }
  expect(problems).toEqual([]);
}, 120_000);
