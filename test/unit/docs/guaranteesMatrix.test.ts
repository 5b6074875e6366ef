// docs/guarantees.md's matrix: rows at-least-once and exactly-once on the driver and on Kafka,
// columns processing, output delivery, ordering, poison, handler error, parking; each cell says
// yes, partial or no and names the test that proves it (`file › test name`). A cell that names a
// test the suite does not have fails here.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');
const COLUMNS = ['mode · world', 'processing', 'output delivery', 'ordering', 'poison', 'handler error', 'parking'];
const ROWS = ['at-least-once · driver', 'at-least-once · Kafka', 'exactly-once · driver', 'exactly-once · Kafka'];

interface Cell {
  readonly row: string;
  readonly column: string;
  readonly verdict: string;
  readonly file: string;
  readonly test: string;
}

/** The matrix's rows of cells, read from the table whose header starts with `| mode · world |`. */
function matrix(markdown: string): { header: string[]; cells: Cell[]; rows: string[] } {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`| ${COLUMNS[0]} |`));
  if (start < 0) throw new Error(`docs/guarantees.md: no table whose header starts with '| ${COLUMNS[0]} |'`);
  const split = (line: string) =>
    line
      .replace(/^\|/, '')
      .replace(/\|$/, '')
      .split('|')
      .map((c) => c.trim());
  const header = split(lines[start]!);
  const cells: Cell[] = [];
  const rows: string[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const [row, ...rest] = split(line);
    rows.push(row!);
    rest.forEach((text, i) => {
      const verdict = /^(yes|partial|no)\b/.exec(text)?.[1] ?? `(none in '${text}')`;
      const ref = text.slice(text.lastIndexOf(' · ') + 3);
      const [file, test] = ref.split(' › ');
      cells.push({ row: row!, column: header[i + 1]!, verdict, file: file ?? '', test: test ?? '' });
    });
  }
  return { header, cells, rows };
}

/** The names of a test file's `it(...)` and `test(...)` calls (`test.prop(...)(...)` too), as written in its source. */
function testNames(file: string): Set<string> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const names = new Set<string>();
  const isTestCallee = (callee: ts.Expression): boolean => {
    if (ts.isIdentifier(callee)) return callee.text === 'it' || callee.text === 'test';
    if (ts.isPropertyAccessExpression(callee)) return isTestCallee(callee.expression);
    // test.prop([...], options)('name', ...)
    if (ts.isCallExpression(callee)) return isTestCallee(callee.expression);
    return false;
  };
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && isTestCallee(node.expression)) {
      const first = node.arguments[0];
      if (first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first))) names.add(first.text);
      else if (first && ts.isTemplateExpression(first)) names.add(first.getText(source).slice(1, -1));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return names;
}

/** What is wrong with each cell: a verdict that is not yes, partial or no, or a test that is not there. */
function problems(cells: readonly Cell[]): string[] {
  const found: string[] = [];
  for (const cell of cells) {
    const where = `${cell.row} / ${cell.column}`;
    if (!['yes', 'partial', 'no'].includes(cell.verdict)) found.push(`${where}: verdict ${cell.verdict}, not yes, partial or no`);
    const path = join(root, cell.file);
    if (!cell.file.startsWith('test/') || !existsSync(path)) {
      found.push(`${where}: names '${cell.file}', which is no test file`);
      continue;
    }
    if (!testNames(path).has(cell.test)) found.push(`${where}: ${cell.file} has no test named '${cell.test}'`);
  }
  return found;
}

describe('docs/guarantees.md, the matrix', () => {
  const { header, cells, rows } = matrix(readFileSync(join(root, 'docs', 'guarantees.md'), 'utf8'));

  it('has a row per delivery mode and world, a column per guarantee', () => {
    expect(header).toEqual(COLUMNS);
    expect(rows).toEqual(ROWS);
    expect(cells).toHaveLength(ROWS.length * (COLUMNS.length - 1));
  });

  it('says yes, partial or no in every cell, and names a test the suite has', () => {
    expect(problems(cells)).toEqual([]);
  });

  it('fails on a cell that names a test the suite does not have', () => {
    const real = cells[0]!;
    expect(problems([{ ...real, test: `${real.test} (renamed)` }])).toEqual([
      `${real.row} / ${real.column}: ${real.file} has no test named '${real.test} (renamed)'`,
    ]);
    expect(problems([{ ...real, file: 'test/driver/missing.test.ts' }])).toHaveLength(1);
    expect(problems([{ ...real, verdict: 'maybe' }])).toHaveLength(1);
  });

  it('reads the names of it(), test() and test.prop()() calls as written, template literals too', () => {
    expect(testNames(join(root, 'test', 'properties', 'crashSchedules.test.ts'))).toContain('the same invariants with the state in LevelDB');
    expect(testNames(join(root, 'test', 'kafka', 'killAndRestart.test.ts'))).toContain(
      'applies every decision exactly once across ${KILLS} kill -9s, and keeps per-account order',
    );
  });
});
