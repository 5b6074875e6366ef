// docs/adoption.md is one test file spread over its ```ts blocks: they are joined, type-checked as
// written (strict), and run here, their tests registered in this file.
import { expect, test } from 'vitest';
import { tsBlocks, typeProblems, writeSnippet } from './docSnippets.js';

const file = writeSnippet('adoption-doc', tsBlocks('docs/adoption.md').join('\n'));

test('docs/adoption.md type-checks in strict mode', () => {
  expect(typeProblems(file)).toEqual([]);
}, 120_000);

// Its tests run as part of this file.
await import(file);
