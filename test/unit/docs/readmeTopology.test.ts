// The README's "A topology" snippet compiles as written (strict), against orderly's own source: a
// snippet that a reader copies must not fail with a type error.
import { expect, test } from 'vitest';
import { tsBlocks, typeProblems, writeSnippet } from './docSnippets.js';

test("the README's topology snippet type-checks in strict mode", () => {
  const [snippet] = tsBlocks('README.md', '## A topology');
  expect(snippet).toContain("from 'orderly'");
  // Only the package name changes: in the repository, 'orderly' is its source.
  expect(typeProblems(writeSnippet('readme-topology', snippet!))).toEqual([]);
});
