import { describe, expect, it } from 'vitest';
import disputes from '../../../examples/disputes/topology.js';
import { orderlyCli } from './orderlyCli.js';

// Each case starts the CLI, which loads the TypeScript compiler: slow on a busy machine.
const CLI_TIMEOUT_MS = 180_000;

describe('orderly describe', () => {
  it('--json prints the disputes example once, its ORDERLY_* values as unknowns with file:line', { timeout: CLI_TIMEOUT_MS }, async () => {
    const result = await orderlyCli(['describe', 'examples/disputes/topology.ts', '--json']);
    expect(result.code).toBe(0);
    const rows = JSON.parse(result.stdout) as Array<{
      file: string;
      name: string;
      description: string;
      unknowns: Array<{ marker: string; env: string; file: string; line: number }>;
    }>;
    expect(rows).toHaveLength(1);
    expect(rows[0]!.unknowns.map((u) => `${u.env} ${u.file}`)).toEqual([
      'ORDERLY_TOPIC_PREFIX examples/disputes/topology.ts',
      'ORDERLY_MAX_IN_FLIGHT examples/disputes/topology.ts',
      'ORDERLY_RETRY_DELAY_MS examples/disputes/topology.ts',
    ]);
    // This process has none of them set: the defaults fill the markers in.
    const filled = rows[0]!.description.replaceAll('<?1>', '').replaceAll('<?2>', '8').replaceAll('<?3>', '1000');
    expect(filled).toBe(disputes.describe());
  });

  it('--mermaid prints the flowchart that toMermaid() prints', { timeout: CLI_TIMEOUT_MS }, async () => {
    const result = await orderlyCli(['describe', 'test/fixtures/describe/project/topologies.ts', '--mermaid']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('%% test/fixtures/describe/project/topologies.ts:8 orders\nflowchart LR\n');
  });

  it('exits 1 naming the DSL rule when a chain is refused, and 2 when an input does not exist', { timeout: CLI_TIMEOUT_MS }, async () => {
    const refused = await orderlyCli(['describe', 'test/fixtures/describe/refused.ts']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain("agentStep 'decide' needs keyedSerial() upstream");
    const missing = await orderlyCli(['describe', 'no/such/file.ts']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('does not exist');
  });

  it('exits 1 when the files named hold no topology, naming them and the fix', { timeout: CLI_TIMEOUT_MS }, async () => {
    const result = await orderlyCli(['describe', 'test/fixtures/describe/project/model.ts']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no topology found in test/fixtures/describe/project/model.ts');
    expect(result.stderr).toContain('name the file or directory that holds the stream(...)...build() chain');
  });
});
