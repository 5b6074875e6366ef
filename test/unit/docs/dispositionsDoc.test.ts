// docs/dispositions.md's example is three files, each ```ts block naming its file in its first line
// (a block without one goes on the file before it): written out, type-checked together as written
// (strict), and run.
import { expect, test } from 'vitest';
import { tsBlocks, typeProblems, writeSnippet } from './docSnippets.js';

const files = new Map<string, string[]>();
let current: string | undefined;
for (const block of tsBlocks('docs/dispositions.md')) {
  current = /^\/\/ ([\w-]+)\.ts\n/.exec(block)?.[1] ?? current;
  if (current === undefined) throw new Error("docs/dispositions.md: its first ts block does not name its file ('// name.ts')");
  files.set(current, [...(files.get(current) ?? []), block]);
}
const written = new Map([...files].map(([name, blocks]) => [name, writeSnippet(name, blocks.join('\n'))]));

test('docs/dispositions.md: the three files type-check in strict mode', () => {
  expect([...written.keys()]).toEqual(['claims-topology', 'claims', 'claims-worker']);
  expect(typeProblems(...written.values())).toEqual([]);
}, 120_000);

test('docs/dispositions.md: claims.ts runs and its assertions hold; claims-worker.ts exports the topology', async () => {
  await import(written.get('claims')!);
  const worker = (await import(written.get('claims-worker')!)) as { default: { source: { topic: string } } };
  expect(worker.default.source.topic).toBe('claims');
});
