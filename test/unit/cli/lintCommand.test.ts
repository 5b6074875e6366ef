import { describe, expect, it } from 'vitest';
import { orderlyCli } from './orderlyCli.js';

// Each case starts the CLI, which loads the TypeScript compiler: slow on a busy machine.
const CLI_TIMEOUT_MS = 180_000;

describe('orderly lint', () => {
  it('exits 0 on examples/', { timeout: CLI_TIMEOUT_MS }, async () => {
    const result = await orderlyCli(['lint', 'examples']);
    expect(result).toMatchObject({ code: 0, stdout: '' });
    // What it checked, on stderr: stdout stays for the findings.
    expect(result.stderr).toMatch(/^orderly lint: no findings; [1-9]\d* checked \(decide functions and effects\)\n$/);
  });

  it('exits 1 with findings, as JSON with --json', { timeout: CLI_TIMEOUT_MS }, async () => {
    const result = await orderlyCli(['lint', 'test/fixtures/lint/deep', '--json']);
    expect(result.code).toBe(1);
    const findings = JSON.parse(result.stdout) as Array<{ rule: string; file: string; line: number; chain: unknown[] }>;
    expect(findings).toMatchObject([{ rule: 'decide-no-process-exit', file: 'test/fixtures/lint/deep/levelThree.ts', line: 3 }]);
    expect(findings[0]!.chain).toHaveLength(5);
    expect(result.stderr).toBe('orderly lint: 1 finding; 2 checked (decide functions and effects)\n');
  });

  it('exits 2 on a usage error', { timeout: CLI_TIMEOUT_MS }, async () => {
    const result = await orderlyCli(['lint', 'no/such/dir']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('does not exist');
  });
});
