import { readFileSync } from 'node:fs';

/** Linux clock ticks per second, the unit of utime and stime in /proc (USER_HZ, 100 on every mainstream kernel). */
const TICKS_PER_SEC = 100;

/**
 * CPU time (user + system, every thread) a running process has used so far, in ms, from
 * /proc/<pid>/stat; undefined once it is gone. Measured from outside, so that Java and Node
 * contenders are measured alike.
 */
export function processCpuMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may hold spaces; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1_000) / TICKS_PER_SEC;
}
