// The README's Kafka quickstart, run as written: the block after the `<!-- quickstart` marker,
// with the broker's port as the only substitution, in bash from the repository root. The broker
// tool is pointed at the suite's broker (ORDERLY_KAFKA_DIR), so its `up` finds it running.
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { REPO } from './worker.js';

/** The commands of the README's quickstart block, exactly as written. */
export function quickstartBlock(readme: string): string {
  const marker = readme.indexOf('<!-- quickstart');
  if (marker < 0) throw new Error('README.md has no <!-- quickstart --> marker before its Kafka quickstart');
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(marker));
  if (!block) throw new Error('README.md: no ```sh block after the quickstart marker');
  return block[1]!;
}

function runBash(script: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    // Its own process group, so that the worker it starts in the background can be stopped too.
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: REPO, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      output += `\n[quickstart test] still running after ${timeoutMs} ms: stopped`;
      process.kill(-child.pid!, 'SIGKILL');
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      // A failed step leaves the background worker running: stop it (it is in the script's group).
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // The group is gone: the script stopped its worker.
      }
      resolve({ code, output });
    });
  });
}

describe('the README quickstart', () => {
  it('runs verbatim: broker, topic, sample events, worker, decisions, a parked key resolved', async () => {
    const bootstrap = inject('kafkaBootstrap');
    const port = bootstrap.split(':').at(-1)!;
    const script = quickstartBlock(readFileSync(join(REPO, 'README.md'), 'utf8')).replaceAll(':9092', `:${port}`);
    expect(script).toContain('orderly run');
    rmSync(join(REPO, '.orderly', 'state', 'quickstart'), { recursive: true, force: true });

    const run = await runBash(script, { ...process.env, ORDERLY_KAFKA_DIR: inject('kafkaDir') }, 200_000);
    expect(run.code, run.output).toBe(0);

    const decisions = run.output
      .split('\n')
      .filter((line) => line.startsWith('acct-') && line.includes('"action"'))
      .map((line) => JSON.parse(line.split('\t')[1]!) as { disputeId: string; action: string; rationale: string });
    // The first read: five decisions; the second, after the resolution: all seven.
    expect(
      decisions
        .slice(0, 5)
        .map((d) => d.disputeId)
        .sort(),
    ).toEqual(['d-1001', 'd-1003', 'd-1004', 'd-1006', 'd-1007']);
    const all = decisions.slice(5);
    expect(all.map((d) => d.disputeId).sort()).toEqual(['d-1001', 'd-1002', 'd-1003', 'd-1004', 'd-1005', 'd-1006', 'd-1007']);
    expect(all.find((d) => d.disputeId === 'd-1002')).toMatchObject({ action: 'refund', rationale: 'checked by hand' });
    // d-1005 waited behind d-1002 and replayed after it.
    expect(all.findIndex((d) => d.disputeId === 'd-1002')).toBeLessThan(all.findIndex((d) => d.disputeId === 'd-1005'));
    expect(run.output).toMatch(/^2 +acct-2 +parked /m);
    expect(run.output).toContain("released: key 'acct-2' of disputes/2");
  });
});
