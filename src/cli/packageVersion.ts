import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The version in orderly's package.json: the nearest one above this module, which is the
 * package's own whether the CLI runs compiled (dist/src/cli) or from source (src/cli).
 */
export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`orderly --version: no package.json above ${fileURLToPath(import.meta.url)}; the package is incomplete, reinstall it`);
    dir = parent;
  }
}
