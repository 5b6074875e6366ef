// The README's testing example, on a topology it defines itself, type-checks as written and runs
// here: its tests are registered in this file.
import { expect, test } from 'vitest';
import { tsBlocks, typeProblems, writeSnippet } from './docSnippets.js';

const file = writeSnippet(
  'readme-testing',
  tsBlocks('README.md', '## Test your own topology (`orderly/testkit`)', '## Run it on Kafka (`orderly run`)').join('\n'),
);

test("the README's testing example type-checks in strict mode", () => {
  expect(typeProblems(file)).toEqual([]);
}, 120_000);

await import(file);
