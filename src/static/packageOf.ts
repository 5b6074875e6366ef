import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** The package a file belongs to: its name, and the file's path inside it. */
export interface PackagePlace {
  readonly name: string;
  /** The path of the file relative to the package's root, with '/' separators. */
  readonly path: string;
}

const names = new Map<string, { name: string; root: string } | undefined>();

function packageAt(dir: string): { name: string; root: string } | undefined {
  if (names.has(dir)) return names.get(dir);
  const manifest = join(dir, 'package.json');
  let found: { name: string; root: string } | undefined;
  if (existsSync(manifest)) {
    const name = (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name;
    found = typeof name === 'string' ? { name, root: dir } : dirname(dir) === dir ? undefined : packageAt(dirname(dir));
  } else {
    found = dirname(dir) === dir ? undefined : packageAt(dirname(dir));
  }
  names.set(dir, found);
  return found;
}

/** The nearest package.json with a name above `filePath` (cached per directory). */
export function packageOf(filePath: string): PackagePlace | undefined {
  const found = packageAt(dirname(filePath));
  return found ? { name: found.name, path: relative(found.root, filePath).split('\\').join('/') } : undefined;
}

/** Whether `filePath` is orderly's own library code (`src/` or `dist/src/` of the orderly package). */
export function isOrderlyLibrary(filePath: string): boolean {
  const place = packageOf(filePath);
  return place?.name === 'orderly' && /^(dist\/)?src\//.test(place.path);
}
