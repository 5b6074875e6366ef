// Builds the lab page (`orderly lab`) into dist/lab: the page's HTML and CSS, and one bundle of
// the page with orderly's engine, the test driver and memory-level, for the browser. Runs as
// part of `npm run build`, after tsc.
import { build } from 'esbuild';
import { copyFile, mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const page = `${root}src/lab/page/`;
const out = `${root}dist/lab/`;

await mkdir(out, { recursive: true });
await build({
  entryPoints: [`${page}main.ts`],
  outfile: `${out}lab.js`,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  legalComments: 'linked',
  alias: { 'node:events': `${page}shims/events.ts` },
  inject: [`${page}shims/buffer.ts`],
  logLevel: 'warning',
});
await Promise.all(['index.html', 'lab.css'].map((file) => copyFile(`${page}${file}`, `${out}${file}`)));
