// The README's "A topology" (with its several-steps sequel) and "Durable steps" snippets compile as written (strict), against
// orderly's own source, in one type-check: a snippet that a reader copies must not fail with a
// type error. readmeDurableSteps.test.ts runs the durable steps one.
import { expect, test } from 'vitest';
import { durableStepsSnippet } from './readmeDurableSteps.js';
import { tsBlocks, typeProblemsIn, writeSnippet } from './docSnippets.js';

test("the README's topology, several steps and durable steps snippets type-check in strict mode", () => {
  const [snippet, steps] = tsBlocks('README.md', '## A topology', '### Adopting it gradually: route, shadow, fallback');
  expect(snippet).toContain("from 'orderly'");
  // The several-steps snippet goes on from the first; its decide reads ctx.decisions.classify as a Kind.
  expect(steps).toContain('ctx.decisions.classify');
  // Only the package name changes: in the repository, 'orderly' is its source.
  expect(typeProblemsIn([writeSnippet('readme-topology', `${snippet!}\n${steps!}`), durableStepsSnippet()])).toEqual([]);
}, 120_000);
