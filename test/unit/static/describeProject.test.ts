import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { Topology } from '../../../src/dsl/topology.js';
import { describeProject, type StaticTopology } from '../../../src/static/describeProject.js';
import { loadProject } from '../../../src/static/project.js';

const root = resolve(import.meta.dirname, '../../..');
const fixture = 'test/fixtures/describe/project';

function readStatically(...inputs: string[]): StaticTopology[] {
  return describeProject(loadProject(inputs, root), root);
}

/** The topology a static row names, built at run time: the export, called when it is a function. */
async function atRunTime(row: StaticTopology): Promise<Topology> {
  const module = (await import(pathToFileURL(resolve(root, row.file)).href)) as Record<string, unknown>;
  const value = module[row.name];
  return (typeof value === 'function' ? (value as () => Topology)() : value) as Topology;
}

// Each case opens a TypeScript project (the compiler parses and binds it): seconds, more on a busy machine.
describe('orderly describe, read statically', { timeout: 180_000 }, () => {
  it('gives every topology of the fixture project the exact runtime describe() text', async () => {
    const rows = readStatically(fixture);
    expect(rows.map((r) => r.name)).toEqual(['orders', 'paymentsTopology', 'euTopology', 'usTopology', 'audit', 'named', 'tuned', 'bounded', 'deduped']);
    for (const row of rows) {
      expect(row.error, row.name).toBeUndefined();
      expect(row.unknowns, row.name).toEqual([]);
      const runtime = await atRunTime(row);
      expect(row.description, row.name).toBe(runtime.describe());
      expect(row.mermaid, row.name).toBe(runtime.toMermaid());
    }
  });

  it('names each topology by the file and line of its declaration, or of the call of its factory', () => {
    const rows = readStatically(`${fixture}/topologies.ts`);
    expect(rows.map((r) => `${r.file}:${r.line} ${r.name}`)).toEqual([
      `${fixture}/topologies.ts:8 orders`,
      `${fixture}/topologies.ts:13 paymentsTopology`,
      `${fixture}/topologies.ts:31 euTopology`,
      `${fixture}/topologies.ts:32 usTopology`,
      `${fixture}/topologies.ts:35 audit`,
      `${fixture}/topologies.ts:38 named`,
      `${fixture}/topologies.ts:50 tuned`,
      `${fixture}/topologies.ts:53 bounded`,
      `${fixture}/topologies.ts:61 deduped`,
    ]);
  });

  it("shows a park's onExhausted known only at run time as a marker, which the DSL alone would refuse", () => {
    const [row, ...more] = readStatically('test/fixtures/describe/unknownDisposition.ts');
    expect(more).toEqual([]);
    expect(row!.error).toBeUndefined();
    expect(row!.description).toContain('review-park (stores: [review-park], attempts: 2, retryDelayMs: 1000, topic: claims.parked, onExhausted: <?1>)');
    expect(row!.unknowns.map((u) => [u.marker, u.expression, u.uses.map((use) => `${use.operator} ${use.option}`)])).toEqual([
      ['<?1>', 'onExhausted: Disposition', ['park onExhausted']],
    ]);
  });

  it("describes a module's default export built in a file it imports, once, as `orderly run` takes it", async () => {
    const [row, ...more] = readStatically('test/fixtures/describe/imported/main.ts');
    expect(more).toEqual([]);
    expect(row).toMatchObject({ file: 'test/fixtures/describe/imported/main.ts', line: 2, name: 'default', unknowns: [] });
    expect(row!.error).toBeUndefined();
    expect(row!.description).toBe((await atRunTime(row!)).describe());
    // The file that builds the chain describes it, and the default export is not a second topology.
    const both = readStatically('test/fixtures/describe/imported');
    expect(both.map((r) => `${r.file}:${r.line} ${r.name}`)).toEqual(['test/fixtures/describe/imported/lib.ts:3 build']);
  });

  it('uses a default parameter, tells two properties of an unknown apart and never shows a placeholder token', async () => {
    const rows = readStatically('test/fixtures/describe/defaults.ts');
    expect(rows.map((r) => r.name)).toEqual(['build', 'unbound', 'loop', 'extend']);
    const [build, unbound, loop, extend] = rows as [StaticTopology, StaticTopology, StaticTopology, StaticTopology];
    expect(build.error).toBeUndefined();
    expect(build.description).toBe((await atRunTime(build)).describe());
    expect(unbound.error).toBeUndefined();
    expect(unbound.unknowns.map((u) => [u.marker, u.expression, u.uses.map((use) => `${use.operator} ${use.option}`)])).toEqual([
      ['<?1>', 'topics.source', ['stream topic']],
      ['<?2>', 'topics.output', ['to topic']],
    ]);
    expect(unbound.description).toContain('Sink: <?2>-sink (topic: <?2>)');
    // One unknown given to both stream() and to() is one value: refused, in markers.
    expect(loop.error).toContain("its output topic is the source topic '<?1>'");
    expect(loop.unknowns.map((u) => [u.marker, u.uses.map((use) => `${use.operator} ${use.option}`)])).toEqual([['<?1>', ['stream topic', 'to topic']]]);
    // Methods of an unknown builder are as unknown as it: the error names the builder, not the chain's text.
    expect(extend.error).toMatch(
      /^the chain cannot be read statically: base: StreamBuilder<\{ id: string \}> \(test\/fixtures\/describe\/defaults.ts:\d+\): parameter 'base' of extend/,
    );
    for (const row of rows) expect(JSON.stringify(row)).not.toContain('__orderly_unknown_');
  });

  describe('the disputes example', () => {
    const saved = { ...process.env };
    afterEach(() => {
      process.env = { ...saved };
    });

    it('finds one topology and lists the values read from ORDERLY_* variables, with file and line', () => {
      const rows = readStatically('examples/disputes');
      expect(rows).toHaveLength(1);
      const [row] = rows as [StaticTopology];
      expect(row).toMatchObject({ file: 'examples/disputes/topology.ts', name: 'disputesTopology' });
      expect(row.unknowns.map((u) => [u.marker, u.env])).toEqual([
        ['<?1>', 'ORDERLY_TOPIC_PREFIX'],
        ['<?2>', 'ORDERLY_MAX_IN_FLIGHT'],
        ['<?3>', 'ORDERLY_RETRY_DELAY_MS'],
      ]);
      for (const unknown of row.unknowns) {
        const source = loadProject([unknown.file], root).targets[0]!.getFullText().split('\n')[unknown.line - 1]!;
        expect(source).toContain(unknown.expression);
        expect(unknown.expression).toContain('process.env');
      }
    });

    it('matches the runtime description everywhere else, whatever the environment holds', async () => {
      const [row] = readStatically('examples/disputes/topology.ts') as [StaticTopology];
      const settings = { ORDERLY_TOPIC_PREFIX: 'staging-', ORDERLY_MAX_IN_FLIGHT: '5', ORDERLY_RETRY_DELAY_MS: '250' };
      Object.assign(process.env, settings);
      const runtime = await atRunTime(row);
      let expected = row.description!;
      for (const unknown of row.unknowns) expected = expected.replaceAll(unknown.marker, settings[unknown.env as keyof typeof settings]);
      expect(runtime.describe()).toBe(expected);
    });
  });
});
