// The README's durable steps example type-checks as written and runs here: its test is
// registered in this file.
import { expect, test } from 'vitest';
import { tsBlocks, typeProblems, writeSnippet } from './docSnippets.js';

const file = writeSnippet(
  'readme-durable-steps',
  tsBlocks('README.md', '## Durable steps inside an agent step (`ctx.step`)', '## What the engine guarantees').join('\n'),
);

test("the README's durable steps example type-checks in strict mode", () => {
  expect(typeProblems(file)).toEqual([]);
}, 120_000);

await import(file);
