// What the package ships imports only what it declares, and each entry point loads only what it needs:
// `orderly` and the CLI's start load no native Kafka client, no fast-check, no test driver.
// Reads dist/ (scripts/test.sh builds before it tests).
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { describe, expect, test } from 'vitest';
import { filesUnder, importsOf, packageOf, root, staticallyReached } from './moduleGraph.js';

const pkg = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as {
  files: string[];
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};
const NATIVE_CLIENT = '@confluentinc/kafka-javascript';

/** Each package that shipped code imports (JavaScript and declarations), with the files that import it. */
function importedPackages(): Map<string, string[]> {
  const dirs = pkg.files.filter((f) => f === 'dist' || f.startsWith('dist/') || f === 'bin');
  const files = dirs.flatMap((dir) => filesUnder(dir, dir === 'bin' ? ['orderly'] : ['.js', '.d.ts']));
  const used = new Map<string, string[]>();
  for (const file of files) {
    const { static: s, dynamic: d } = importsOf(file);
    for (const name of [...s, ...d].map(packageOf)) {
      if (name) used.set(name, [...(used.get(name) ?? []), relative(root, file)]);
    }
  }
  return used;
}

describe('the shipped files (package.json "files")', () => {
  const used = importedPackages();
  const declared = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.peerDependencies ?? {})]);

  test('import only packages declared as dependencies or peer dependencies', () => {
    const undeclared = [...used].filter(([name]) => !declared.has(name)).map(([name, files]) => `${name} (imported by ${files.join(', ')})`);
    expect(undeclared).toEqual([]);
  });

  test('use every runtime dependency', () => {
    expect(Object.keys(pkg.dependencies).filter((name) => !used.has(name))).toEqual([]);
  });

  test('fast-check is an optional peer dependency, imported only by the testkit', () => {
    expect(pkg.peerDependencies?.['fast-check']).toBeDefined();
    expect(pkg.peerDependenciesMeta?.['fast-check']?.optional).toBe(true);
    expect(used.get('fast-check')?.every((file) => file.startsWith('dist/testkit/'))).toBe(true);
  });
});

describe('what loading an entry point loads (its static imports)', () => {
  test('orderly loads no native Kafka client and no fast-check', () => {
    const reached = staticallyReached('dist/src/index.js');
    expect(reached.get(NATIVE_CLIENT), `chain: ${reached.get(NATIVE_CLIENT)?.join(' -> ')}`).toBeUndefined();
    expect(reached.get('fast-check')).toBeUndefined();
    expect(reached.has('level')).toBe(true); // the walk reaches the state layer's imports
  });

  test('orderly/kafka loads the native Kafka client', () => {
    expect(staticallyReached('dist/src/kafka/index.js').has(NATIVE_CLIENT)).toBe(true);
  });

  test("the CLI loads no command's code before the command runs", () => {
    const reached = staticallyReached('dist/src/cli/main.js');
    expect([...reached.keys()].sort()).toEqual(['commander']);
  });
});
