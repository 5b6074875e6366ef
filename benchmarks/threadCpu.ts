import { readFileSync } from 'node:fs';

/**
 * CPU time of this process's main thread so far (user + system, ms), from Linux's
 * `/proc/self/task/<pid>/stat`; undefined elsewhere. Unlike `process.cpuUsage()` it leaves out
 * LevelDB's and the garbage collector's helper threads, which run beside the engine on another core.
 */
export function mainThreadCpuMs(): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // After the command name, which may hold spaces: state is field 3, utime and stime fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  // The kernel counts in clock ticks of 1/100 s (USER_HZ) on every architecture Node runs on.
  return Number.isFinite(ticks) ? ticks * 10 : undefined;
}
