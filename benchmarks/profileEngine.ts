/**
 * The engine throughput benchmark alone, to profile it:
 * `node --cpu-prof --cpu-prof-dir=/tmp/orderly-prof --import tsx benchmarks/profileEngine.ts`
 * then open the .cpuprofile in Chrome DevTools (Performance) or VS Code.
 */
import { measureEngineThroughput } from './engineThroughput.js';
import { progressOnStderr } from './progress.js';

const result = await measureEngineThroughput(progressOnStderr());
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
