// A broker test's log, kept in memory and printed only when the test fails. These tests run
// quiet, and a failure that happens once in many CI runs (a rebalance that never completes) is
// explained only by what the log and librdkafka said just before it.
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { beforeEach, onTestFailed } from 'vitest';

/** How many of a test's last log lines a failure prints. */
const KEPT_LINES = 400;

/**
 * A logger for one test file whose lines (at `ORDERLY_TEST_LOG_LEVEL`, `debug` unless set) are
 * kept per test and written to stderr if the test fails: call it at the file's top level.
 */
export function failureLog(): Logger {
  let kept: string[] = [];
  let dropped = 0;
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.length === 0) continue;
        kept.push(line);
        if (kept.length > KEPT_LINES * 2) {
          dropped += kept.length - KEPT_LINES;
          kept = kept.slice(-KEPT_LINES);
        }
      }
      done();
    },
  });
  beforeEach((context) => {
    kept = [];
    dropped = 0;
    onTestFailed(() => {
      const lines = kept.slice(-KEPT_LINES);
      const before = dropped + kept.length - lines.length;
      process.stderr.write(
        `--- the log of '${context.task.name}' (its last ${lines.length} lines${before > 0 ? `, ${before} before them left out` : ''}):\n${lines.join('\n')}\n--- end of the log\n`,
      );
    });
  });
  return pino({ level: process.env.ORDERLY_TEST_LOG_LEVEL ?? 'debug' }, stream);
}
