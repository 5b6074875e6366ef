/**
 * The engine throughput benchmark alone, to profile it:
 *
 * ```sh
 * npm run build && node --import tsx benchmarks/profileEngine.ts [--cpu FILE.cpuprofile] [--heap FILE.heapprofile]
 * ```
 *
 * `--cpu` samples the main thread every 200 µs, `--heap` samples allocations (those collected
 * since included), both over the timed phase only: from just before the clock starts to just
 * after it stops. Open either file in Chrome DevTools or VS Code. The result goes to stdout.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { parseArgs } from 'node:util';
import { measureEngineThroughput } from './engineThroughput.js';
import { progressOnStderr, type Progress } from './progress.js';

const USAGE = 'node --import tsx benchmarks/profileEngine.ts [--cpu FILE.cpuprofile] [--heap FILE.heapprofile]: the engine benchmark alone, profiled\n';

function options(): { cpu?: string; heap?: string } {
  try {
    const { values } = parseArgs({ options: { cpu: { type: 'string' }, heap: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
    if (values.help) {
      process.stdout.write(USAGE);
      process.exit(0);
    }
    return values;
  } catch (error) {
    process.stderr.write(`profileEngine: ${(error as Error).message}\n${USAGE}`);
    process.exit(2);
  }
}

const values = options();

/** Posts to the inspector of this very thread: it answers before `post` returns. */
function post<T = unknown>(session: Session, method: string, params?: object): T {
  let answer: { error: Error | null; result: T } | undefined;
  session.post(method, params ?? {}, (error, result) => (answer = { error, result: result as T }));
  if (!answer) throw new Error(`inspector: ${method} did not answer at once`);
  if (answer.error) throw answer.error;
  return answer.result;
}

/** Progress that starts the profilers when the timed phase starts and writes them when it ends. */
function profiling(inner: Progress, session: Session): Progress {
  return {
    phase(name, total, unit) {
      const phase = inner.phase(name, total, unit);
      if (values.heap)
        post(session, 'HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      if (values.cpu) post(session, 'Profiler.start');
      return {
        update: (done) => phase.update(done),
        finish(summary) {
          if (values.cpu) writeFileSync(values.cpu, JSON.stringify(post<{ profile: unknown }>(session, 'Profiler.stop').profile));
          if (values.heap) writeFileSync(values.heap, JSON.stringify(post<{ profile: unknown }>(session, 'HeapProfiler.stopSampling').profile));
          phase.finish(summary);
        },
      };
    },
  };
}

const session = new Session();
session.connect();
if (values.cpu) {
  post(session, 'Profiler.enable');
  post(session, 'Profiler.setSamplingInterval', { interval: 200 });
}
if (values.heap) post(session, 'HeapProfiler.enable');
const result = await measureEngineThroughput(profiling(progressOnStderr(), session));
session.disconnect();
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
