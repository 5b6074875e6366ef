import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { TopologyTestDriver } from '../testkit/driver.js';
const session = new Session(); session.connect();
await session.post('HeapProfiler.enable');
const orig = TopologyTestDriver.prototype.runUntilIdle;
TopologyTestDriver.prototype.runUntilIdle = async function (...a: any[]) {
  await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as any);
  try { return await orig.apply(this, a as any); } finally {
    const { profile } = await session.post('HeapProfiler.stopSampling');
    writeFileSync('/tmp/prof2/heap.json', JSON.stringify(profile));
  }
};
const { measureEngineThroughput } = await import('./engineThroughput.js');
const { progressOnStderr } = await import('./progress.js');
const r = await measureEngineThroughput(progressOnStderr());
console.log(r.eventsPerSec);
