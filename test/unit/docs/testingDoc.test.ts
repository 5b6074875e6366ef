// docs/testing.md is one test file spread over its ```ts blocks: they are joined, type-checked as
// written (strict), and run here, their tests registered in this file.
import { expect, test } from 'vitest';
import { tsBlocks, typeProblemsIn, writeSnippet } from './docSnippets.js';

const file = writeSnippet('testing-doc', tsBlocks('docs/testing.md').join('\n'));
// docs/adoption.md runs in adoptionDoc.test.ts; it is type-checked here, in the same program, which
// saves loading the libraries and orderly's source a second time.
const adoption = writeSnippet('adoption-doc-checked', tsBlocks('docs/adoption.md').join('\n'));

test('docs/testing.md and docs/adoption.md type-check in strict mode', () => {
  expect(typeProblemsIn([file, adoption])).toEqual([]);
}, 120_000);

// Its tests run as part of this file.
await import(file);
