import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateProject } from '../../../benchmarks/static/generateProject.js';
import { lintProject } from '../../../src/lint/lintProject.js';
import { describeProject } from '../../../src/static/describeProject.js';
import { loadProject } from '../../../src/static/project.js';

const root = resolve(import.meta.dirname, '../../..');
const dir = mkdtempSync(join(os.tmpdir(), 'orderly-generated-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Each case opens a TypeScript project (the compiler parses and binds it): seconds, more on a busy machine.
describe('the generated project of the describe and lint benchmark', { timeout: 180_000 }, () => {
  const project = generateProject(dir, 12, join(root, 'src'));

  it('is read whole by describe, and lint finds exactly the planted process.exit, three calls down', () => {
    expect(project).toMatchObject({ files: 10, topologies: 2, violations: 1 });
    const topologies = describeProject(loadProject([dir], dir), dir);
    expect(topologies.map((t) => [t.name, t.error, t.unknowns.length])).toEqual([
      ['topology0', undefined, 0],
      ['topology1', undefined, 0],
    ]);
    expect(topologies[1]!.description).toContain('Processor: orders-1-keyed-serial (stores: [], maxInFlight: 2)');
    expect(topologies[1]!.description).toContain('limit: 10 calls per 60000 ms');
    const { findings } = lintProject(loadProject([dir], dir), dir);
    expect(findings.map((f) => [f.rule, f.chain.map((link) => link.name)])).toEqual([
      ['decide-no-process-exit', ["agentStep 'decide-0'", 'levelOne0', 'levelTwo0', 'levelThree0', 'process.exit']],
    ]);
  });
});
