// The README's durable steps example, written as a module (readmeTopology.test.ts type-checks it;
// readmeDurableSteps.test.ts runs it).
import { tsBlocks, writeSnippet } from './docSnippets.js';

export function durableStepsSnippet(): string {
  return writeSnippet(
    'readme-durable-steps',
    tsBlocks('README.md', '## Durable steps inside an agent step (`ctx.step`)', '## What the engine guarantees').join('\n'),
  );
}
