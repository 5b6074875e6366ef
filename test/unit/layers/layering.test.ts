// The layering check (.dependency-cruiser.cjs, `npm run -s lint:layers`) passes on the tree as it
// is, and fails, naming the rule and both files, on a copy of src/ with an import that points up a
// layer: an engine file that imports dsl/ (by value, and type-only), graph/ importing dsl/, a cycle.
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, test } from 'vitest';

const run = promisify(execFile);
const root = resolve(import.meta.dirname, '../../..');
const copy = join(root, '.cache', 'layering');

afterAll(() => rmSync(copy, { recursive: true, force: true }));

/** Runs dependency-cruiser with the project's config over `dir`'s src/ (and what it imports): its exit code and report. */
async function cruise(dir: string): Promise<{ code: number; report: string }> {
  const bin = join(root, 'node_modules', '.bin', 'depcruise');
  const args = ['--config', join(root, '.dependency-cruiser.cjs'), 'src'];
  return run(bin, args, { cwd: dir, maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout }) => ({ code: 0, report: stdout }),
    (error: { code: number; stdout: string }) => ({ code: error.code, report: error.stdout }),
  );
}

test('npm run -s lint:layers passes on the tree as it is', async () => {
  const { stdout } = await run('npm', ['run', '-s', 'lint:layers'], { cwd: root });
  expect(stdout).toContain('no dependency violations found');
});

test('the layering check fails on an engine file that imports dsl/, on graph/ importing dsl/, and on a cycle', async () => {
  rmSync(copy, { recursive: true, force: true });
  mkdirSync(copy, { recursive: true });
  for (const dir of ['src', 'testkit']) cpSync(join(root, dir), join(copy, dir), { recursive: true });
  cpSync(join(root, 'tsconfig.json'), join(copy, 'tsconfig.json'));
  const before = await cruise(copy);
  expect(before.report).toContain('no dependency violations found');
  expect(before.code).toBe(0);

  writeFileSync(join(copy, 'src/engine/importsDsl.ts'), "import { stream } from '../dsl/stream.js';\nexport const start = stream;\n");
  writeFileSync(
    join(copy, 'src/engine/importsDslType.ts'),
    "import type { StreamBuilder } from '../dsl/stream.js';\nexport type Builder = StreamBuilder<unknown>;\n",
  );
  writeFileSync(join(copy, 'src/graph/importsDsl.ts'), "import type { NameOption } from '../dsl/stream.js';\nexport type Named = NameOption;\n");
  writeFileSync(join(copy, 'src/engine/cycleA.ts'), "import { b } from './cycleB.js';\nexport const a = (): number => b() + 1;\n");
  writeFileSync(join(copy, 'src/engine/cycleB.ts'), "import { a } from './cycleA.js';\nexport const b = (): number => (a.length > 0 ? 0 : 1);\n");
  const after = await cruise(copy);

  expect(after.report).toContain('error engine-layer: src/engine/importsDsl.ts → src/dsl/stream.ts');
  expect(after.report).toContain('error engine-layer: src/engine/importsDslType.ts → src/dsl/stream.ts');
  expect(after.report).toContain('error graph-layer: src/graph/importsDsl.ts → src/dsl/stream.ts');
  expect(after.report).toMatch(/error no-cycles: src\/engine\/cycle[AB]\.ts → \s*src\/engine\/cycle[BA]\.ts/);
  // The exit code is the number of errors (a cycle is one), so a failed check fails its command.
  expect(after.code).toBe(4);
}, 120_000);
