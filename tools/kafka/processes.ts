/**
 * Detached JVM processes tracked by pid files: start, check, stop.
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/** A process to start with its output written to a file (emptied first). */
export interface DetachedCommand {
  command: string;
  args: string[];
  cwd: string;
  outputFile: string;
  pidFile: string;
}

/**
 * Starts `command` in its own process group, detached from this process (it
 * keeps running after node exits), and records its pid.
 */
export function startDetached(spec: DetachedCommand): number {
  const output = openSync(spec.outputFile, "w");
  try {
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      detached: true,
      stdio: ["ignore", output, output],
    });
    child.on("error", () => undefined); // a failed start shows as a missing pid below
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start ${spec.command}`);
    writeFileSync(spec.pidFile, `${child.pid}\n`);
    return child.pid;
  } finally {
    closeSync(output);
  }
}

/** The pid recorded in `pidFile`, or undefined. */
export function readPid(pidFile: string): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, "utf8").trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/**
 * True when `pid` is alive and, where /proc can tell, its command line
 * contains `marker` (so a recycled pid or a zombie does not count).
 */
export function isAlive(pid: number, marker: string): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker);
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

/** The pid from `pidFile` when that process is alive, else undefined. */
export function runningPid(pidFile: string, marker: string): number | undefined {
  const pid = readPid(pidFile);
  return pid !== undefined && isAlive(pid, marker) ? pid : undefined;
}

/** Waits until `pid` has exited, up to `ms`; returns whether it did. */
async function waitForExit(pid: number, marker: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid, marker)) {
    if (Date.now() >= deadline) return false;
    await sleep(100);
  }
  return true;
}

/**
 * Stops the process of `pidFile`: `signal` first (SIGTERM by default), then
 * SIGKILL after `graceMs`. Removes the pid file. Does nothing when it is not
 * running.
 */
export async function stopProcess(pidFile: string, marker: string, graceMs: number, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  const pid = runningPid(pidFile, marker);
  if (pid !== undefined) {
    process.kill(pid, signal);
    if (!(await waitForExit(pid, marker, graceMs))) {
      process.kill(pid, "SIGKILL");
      await waitForExit(pid, marker, 10_000);
    }
  }
  rmSync(pidFile, { force: true });
}
