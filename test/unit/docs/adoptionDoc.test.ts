// docs/adoption.md is one test file spread over its ```ts blocks: they are joined and run here,
// their tests registered in this file (testingDoc.test.ts type-checks them as written, strict).
import { tsBlocks, writeSnippet } from './docSnippets.js';

const file = writeSnippet('adoption-doc', tsBlocks('docs/adoption.md').join('\n'));

// Its tests run as part of this file.
await import(file);
