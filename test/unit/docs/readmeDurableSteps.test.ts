// The README's durable steps example runs here: its test is registered in this file
// (readmeTopology.test.ts type-checks it with the topology snippet, in one program).
import { durableStepsSnippet } from './readmeDurableSteps.js';

await import(durableStepsSnippet());
