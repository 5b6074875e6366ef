import { readdirSync, readFileSync } from 'node:fs';

/** CPU ticks (1/100 s on Linux) of each thread of this process, by thread id, with its name. */
type Ticks = Map<string, { readonly name: string; readonly ticks: number }>;

/** Reads /proc/self/task/<tid>/stat; empty where there is no /proc. */
export function threadTicks(): Ticks {
  const ticks: Ticks = new Map();
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return ticks;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // The name is in parentheses and may hold spaces; the fields after it are space-separated.
      const close = stat.lastIndexOf(')');
      const name = stat.slice(stat.indexOf('(') + 1, close);
      const fields = stat.slice(close + 2).split(' ');
      // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
      ticks.set(tid, { name, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // The thread ended meanwhile.
    }
  }
  return ticks;
}

/**
 * CPU milliseconds per kind of thread between two readings: `main` (the JavaScript thread),
 * `librdkafka` (its rdk:* threads) and `other`: Node names the rest alike, the libuv pool (where
 * LevelDB writes and the consume calls wait) and V8's helpers (concurrent GC, compiler).
 */
export function threadCpuMs(before: Ticks, after: Ticks): Record<string, number> {
  const out: Record<string, number> = {};
  const pid = String(process.pid);
  for (const [tid, { name, ticks }] of after) {
    const kind = tid === pid ? 'main' : name.startsWith('rdk:') ? 'librdkafka' : 'other';
    out[kind] = (out[kind] ?? 0) + (ticks - (before.get(tid)?.ticks ?? 0)) * 10;
  }
  return out;
}
