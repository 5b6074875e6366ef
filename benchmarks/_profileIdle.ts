import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { TopologyTestDriver } from '../testkit/driver.js';
const session = new Session(); session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 200 });
const orig = TopologyTestDriver.prototype.runUntilIdle;
TopologyTestDriver.prototype.runUntilIdle = async function (...a: any[]) {
  await session.post('Profiler.start');
  try { return await orig.apply(this, a as any); } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync('/tmp/prof2/idle.cpuprofile', JSON.stringify(profile));
  }
};
const { measureEngineThroughput } = await import('./engineThroughput.js');
const { progressOnStderr } = await import('./progress.js');
const r = await measureEngineThroughput(progressOnStderr());
console.log(r.eventsPerSec, r.eventsPerMainThreadCpuSec);
