import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** The packages a module loads statically, through its relative imports too (dynamic imports are left out: they load on demand). */
function staticPackages(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const [, clause, from, bare] of readFileSync(file, 'utf8').matchAll(/^(?:import|export)\s([^;]*?)\sfrom\s+'([^']+)'|^import\s+'([^']+)'/gm)) {
      const specifier = from ?? bare;
      // Type-only imports are erased when compiled.
      if (!specifier || clause?.startsWith('type ')) continue;
      if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
      else packages.add(specifier);
    }
  };
  visit(resolve(ROOT, entry));
  return packages;
}

describe('entry points', () => {
  it('orderly, orderly/kafka and orderly/testkit do not load prom-client; orderly/metrics does', () => {
    expect(staticPackages('src/index.ts')).not.toContain('prom-client');
    expect(staticPackages('src/kafka/index.ts')).not.toContain('prom-client');
    expect(staticPackages('testkit/index.ts')).not.toContain('prom-client');
    expect(staticPackages('src/cli/main.ts')).not.toContain('prom-client');
    expect(staticPackages('src/metrics/index.ts')).toContain('prom-client');
  });
});
