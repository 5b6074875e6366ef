// The README's "A topology" and "Durable steps" snippets compile as written (strict), against
// orderly's own source, in one type-check: a snippet that a reader copies must not fail with a
// type error. readmeDurableSteps.test.ts runs the durable steps one.
import { expect, test } from 'vitest';
import { durableStepsSnippet } from './readmeDurableSteps.js';
import { tsBlocks, typeProblemsIn, writeSnippet } from './docSnippets.js';

test("the README's topology and durable steps snippets type-check in strict mode", () => {
  const [snippet] = tsBlocks('README.md', '## A topology');
  expect(snippet).toContain("from 'orderly'");
  // Only the package name changes: in the repository, 'orderly' is its source.
  expect(typeProblemsIn([writeSnippet('readme-topology', snippet!), durableStepsSnippet()])).toEqual([]);
}, 120_000);
