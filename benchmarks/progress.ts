import cliProgress from 'cli-progress';

/** One phase of a run, reported as it advances. */
export interface Phase {
  /** `done` of the phase's total units are done. */
  update(done: number): void;
  /** The phase is over; `summary` is its figure in a few words. */
  finish(summary: string): void;
}

/** Where a run reports its progress: always stderr, so stdout holds the result alone. */
export interface Progress {
  phase(name: string, total: number, unit: string): Phase;
}

/** A progress bar per phase when stderr is a terminal; plain lines (start, every quarter, end) otherwise. */
export function progressOnStderr(): Progress {
  return process.stderr.isTTY ? new BarProgress() : new LineProgress();
}

class BarProgress implements Progress {
  phase(name: string, total: number, unit: string): Phase {
    const bar = new cliProgress.SingleBar(
      { format: `${name.padEnd(28)} [{bar}] {percentage}% | {value}/{total} ${unit} | {duration_formatted}`, stream: process.stderr, hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0);
    return {
      update: (done) => bar.update(Math.min(done, total)),
      finish: (summary) => {
        bar.update(total);
        bar.stop();
        process.stderr.write(`  ${name}: ${summary}\n`);
      },
    };
  }
}

class LineProgress implements Progress {
  phase(name: string, total: number, unit: string): Phase {
    const started = performance.now();
    let quarter = 0;
    process.stderr.write(`${name}: started (${total} ${unit})\n`);
    return {
      update: (done) => {
        const reached = Math.min(3, Math.floor((4 * done) / total));
        if (reached <= quarter) return;
        quarter = reached;
        process.stderr.write(`${name}: ${done}/${total} ${unit}\n`);
      },
      finish: (summary) => {
        process.stderr.write(`${name}: ${summary} (${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
      },
    };
  }
}
